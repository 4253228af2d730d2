import { Command, CommanderError, Option } from 'commander';
import { loadConfig, type ConfigFlags } from '../config/load-config.js';
import { POLICY_NAMES } from '../config/schema.js';
import { DEFAULT_CONFIG } from '../config/validate.js';
import { LlrError } from '../core/errors.js';
import { ENGINE_NAMES } from '../core/worker.js';
import { serve } from './serve.js';

/** Exit code for a bad flag or config, as the contract says. */
export const EXIT_USAGE = 2;

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

function buildProgram(
  run: (command: 'serve', flags: ConfigFlags & { printConfig?: boolean }) => Promise<void>,
) {
  const d = DEFAULT_CONFIG;
  const program = new Command('least-load-router')
    .description('KV-cache-aware load balancing for LLM inference servers (Envoy ext_proc and HTTP proxy)')
    .exitOverride()
    .showHelpAfterError();

  program
    .command('serve', { isDefault: true })
    .description('route requests to the configured workers')
    .option('--config <file>', 'YAML or JSON config; flags override it')
    .option('--worker <url>', 'worker base URL, e.g. http://10.0.0.5:30000 (repeatable)', collect)
    .addOption(
      new Option('--engine <name>', `load protocol of --worker: ${ENGINE_NAMES.join(', ')}`).default(
        undefined,
        'auto',
      ),
    )
    .option('--policy <name>', `${POLICY_NAMES.join(', ')} (default ${d.policy.name})`)
    .option('--lambda <n>', 'least_load KV-pressure weight, finite and >= 0 (default 1.5)')
    .option('--poll-interval <seconds>', `load poll period, > 0 (default ${d.poller.intervalSecs})`)
    .option('--ext-proc-port <n>', `Envoy ext_proc gRPC listener, 0 = off (default ${d.envoy.port})`)
    .option('--proxy-port <n>', `standalone HTTP reverse proxy, 0 = off (default ${d.proxy.port})`)
    .option(
      '--metrics-port <n>',
      `/metrics, /healthz, /readyz, /workers, 0 = off (default ${d.metrics.port})`,
    )
    .option('--host <addr>', `bind address (default ${d.host})`)
    .option('--print-config', 'validate, print the resolved config as JSON and exit')
    .action((flags: ConfigFlags & { printConfig?: boolean }) => run('serve', flags));

  return program;
}

/** Runs the CLI; resolves to the process exit code (serve resolves once it has shut down). */
export async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const program = buildProgram(async (_command, flags) => {
    const config = await loadConfig(flags);
    if (flags.printConfig) {
      process.stdout.write(`${JSON.stringify(config, null, 2)}\n`);
      return;
    }
    exitCode = await serve(config, flags);
  });
  try {
    await program.parseAsync(argv);
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here too, with their own zero exit code.
      return err.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    if (err instanceof LlrError && err.code === 'LLR_CONFIG') {
      process.stderr.write(`least-load-router: ${err.message}\n`);
      return EXIT_USAGE;
    }
    throw err;
  }
}
