import type { Config } from '../config/schema.js';
import { Router } from '../router.js';

/** Starts everything the config asks for and runs until SIGTERM or SIGINT; resolves to the exit code. */
export async function serve(config: Config): Promise<number> {
  const router = new Router(config);
  await router.start();
  process.stderr.write(`least-load-router: ${router.pool.size} worker(s), policy ${router.policy.name}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await router.stop();
  return 0;
}
