import type { Config } from '../config/schema.js';
import { RouterMetrics } from '../metrics/router-metrics.js';
import { Router } from '../router.js';
import { startStatusServer } from '../status/status-server.js';

/** Something serve started and must stop on shutdown. */
interface Service {
  name: string;
  close(): Promise<void>;
}

/** Starts everything the config asks for and runs until SIGTERM or SIGINT; resolves to the exit code. */
export async function serve(config: Config): Promise<number> {
  const router = new Router(config);
  const metrics = new RouterMetrics(router);
  const services: Service[] = [];
  const log = (msg: string) => process.stderr.write(`least-load-router: ${msg}\n`);

  await router.start();
  if (config.metrics.port > 0) {
    const status = await startStatusServer(router, metrics, { port: config.metrics.port, host: config.host });
    services.push({ name: 'status', close: () => status.close() });
    log(`metrics and status on http://${config.host}:${status.port} (/metrics /healthz /readyz /workers)`);
  }
  log(`${router.pool.size} worker(s), policy ${router.policy.name}`);

  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  for (const service of services.reverse()) await service.close();
  await router.stop();
  metrics.close();
  return 0;
}
