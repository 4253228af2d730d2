import { Command, CommanderError, Option } from 'commander';
import { loadConfig, type ConfigFlags } from '../config/load-config.js';
import { POLICY_NAMES, policySchema } from '../config/schema.js';
import { DEFAULT_CONFIG, parseOrThrow } from '../config/validate.js';
import { ConfigError, LlrError } from '../core/errors.js';
import { ENGINE_NAMES } from '../core/worker.js';
import { SCENARIO_NAMES } from '../sim/scenarios.js';
import { DEMO_DEFAULTS, demo, type DemoOptions } from './demo.js';
import { serve } from './serve.js';
import { simFleet } from './sim.js';

/** Exit code for a bad flag or config, as the contract says. */
export const EXIT_USAGE = 2;

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

interface DemoFlags {
  sim?: boolean;
  duration?: string;
  scenario?: string;
  policies?: string;
  speedup?: string;
  proxyPort?: string;
  metricsPort?: string;
}

function buildProgram(
  run: (command: 'serve', flags: ConfigFlags & { printConfig?: boolean }) => Promise<void>,
  runDemo: (flags: DemoFlags) => Promise<void>,
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

  program
    .command('demo')
    .description('run a simulated LLM fleet behind the router and compare policies (what npm start runs)')
    .option(
      '--duration <seconds>',
      `total run time, split between the policies (default ${DEMO_DEFAULTS.durationSec})`,
    )
    .option(
      '--scenario <name>',
      `simulated fleet: ${SCENARIO_NAMES.join(', ')} (default ${DEMO_DEFAULTS.scenario})`,
    )
    .option(
      '--policies <list>',
      `comma-separated policies to compare (default ${DEMO_DEFAULTS.policies.join(',')})`,
    )
    .option(
      '--speedup <n>',
      `model time runs this much faster than the clock (default ${DEMO_DEFAULTS.speedup})`,
    )
    .option('--proxy-port <n>', 'HTTP proxy port for your own curls (default: any free port)')
    .option('--metrics-port <n>', 'status and metrics port (default: any free port)')
    .action((flags: DemoFlags) => runDemo(flags));

  program
    .command('sim')
    .description('run a simulated LLM fleet on local ports until Ctrl-C (workers to try the router with)')
    .option('--scenario <name>', `${SCENARIO_NAMES.join(', ')} (default mixed)`)
    .option('--speedup <n>', 'model time runs this much faster than the clock (default 1)')
    .action((flags: DemoFlags) => runDemo({ ...flags, sim: true }));

  return program;
}

function parseDemoFlags(flags: DemoFlags): DemoOptions {
  const number = (field: string, text: string | undefined, fallback: number, min: number): number => {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isFinite(n) || n < min)
      throw new ConfigError(field, `must be a number >= ${min}, got ${text}`);
    return n;
  };
  const scenario = flags.scenario ?? DEMO_DEFAULTS.scenario;
  if (!(SCENARIO_NAMES as string[]).includes(scenario)) {
    throw new ConfigError('scenario', `must be one of ${SCENARIO_NAMES.join(', ')}, got ${scenario}`);
  }
  const policies = flags.policies ? flags.policies.split(',').map((p) => p.trim()) : DEMO_DEFAULTS.policies;
  for (const [i, p] of policies.entries()) parseOrThrow(policySchema, p, `policies.${i}`);
  return {
    ...DEMO_DEFAULTS,
    durationSec: number('duration', flags.duration, DEMO_DEFAULTS.durationSec, 1),
    speedup: number('speedup', flags.speedup, DEMO_DEFAULTS.speedup, 0.1),
    proxyPort: number('proxy-port', flags.proxyPort, DEMO_DEFAULTS.proxyPort, 0),
    metricsPort: number('metrics-port', flags.metricsPort, DEMO_DEFAULTS.metricsPort, 0),
    scenario: scenario as DemoOptions['scenario'],
    policies,
  };
}

/** Runs the CLI; resolves to the process exit code (serve resolves once it has shut down). */
export async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const program = buildProgram(
    async (_command, flags) => {
      const config = await loadConfig(flags);
      if (flags.printConfig) {
        process.stdout.write(`${JSON.stringify(config, null, 2)}\n`);
        return;
      }
      exitCode = await serve(config, flags);
    },
    async (flags) => {
      const options = parseDemoFlags(flags.sim ? { speedup: '1', ...flags } : flags);
      exitCode = flags.sim ? await simFleet(options.scenario, options.speedup) : await demo(options);
    },
  );
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
