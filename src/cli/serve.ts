import { unwatchFile, watchFile } from 'node:fs';
import { loadConfig, type ConfigFlags } from '../config/load-config.js';
import type { Config } from '../config/schema.js';
import { Gateway } from '../gateway.js';
import { createLogger } from '../logging/logger.js';

/**
 * `least-load-router serve`: starts what the config asks for and runs until SIGTERM/SIGINT.
 * The first signal drains (bounded by shutdown.drainTimeoutSecs) and exits 0; a second one exits
 * at once. SIGHUP or a change of the --config file reloads; an invalid new config is logged and
 * the running one stays.
 */
export async function serve(config: Config, flags: ConfigFlags): Promise<number> {
  const logger = createLogger(config.log.level);
  const gateway = new Gateway(config, { logger });
  await gateway.start();
  if (config.metrics.port > 0) {
    const status = await gateway.startStatus(config.metrics.port);
    logger.info({ port: status.port, host: config.host }, 'metrics and status listening');
  }
  if (config.envoy.port > 0) {
    const extProc = await gateway.startExtProc(config.envoy.port);
    logger.info({ port: extProc.port, host: config.host }, 'Envoy ext_proc server listening');
  }
  if (config.proxy.port > 0) {
    const proxy = await gateway.startProxy(config.proxy.port);
    logger.info({ port: proxy.port, host: config.host }, 'HTTP proxy listening');
  }
  logger.info({ workers: gateway.router.pool.size, policy: config.policy }, 'least-load-router started');

  let reloading = Promise.resolve();
  const reload = (why: string): void => {
    reloading = reloading.then(async () => {
      try {
        gateway.reload(await loadConfig(flags));
      } catch (err) {
        logger.error(
          { why, err: (err as Error).message },
          'config reload rejected; keeping the running config',
        );
      }
    });
  };
  const onHup = () => reload('SIGHUP');
  process.on('SIGHUP', onHup);
  const configFile = flags.config;
  if (configFile) {
    // Polling stat survives editors' rename-and-replace and Kubernetes' ConfigMap symlink swaps,
    // which fs.watch loses track of.
    watchFile(configFile, { interval: 1000 }, (curr, prev) => {
      if (curr.mtimeMs !== prev.mtimeMs) reload('file changed');
    });
  }

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  const again = (second: NodeJS.Signals) => {
    logger.warn({ signal: second }, 'second signal: exiting now');
    process.exit(1);
  };
  process.once('SIGTERM', again);
  process.once('SIGINT', again);
  logger.info({ signal }, 'signal received');

  process.off('SIGHUP', onHup);
  if (configFile) unwatchFile(configFile);
  await reloading;
  await gateway.shutdown(); // logs whether everything drained before the deadline
  logger.flush();
  // Anything still holding the event loop (a client's idle keep-alive socket) must not keep a
  // terminated process alive; the timer is unref'd, so a clean exit happens first.
  setTimeout(() => process.exit(0), 2000).unref();
  return 0;
}
