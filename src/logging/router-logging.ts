import type { Router } from '../router.js';
import type { Logger } from './logger.js';

/**
 * One log line per worker state change (added, removed, healthy, unhealthy) and, at debug level
 * only, one per request: a busy gateway must not log at request rate by default.
 */
export function logRouterEvents(router: Router, logger: Logger): () => void {
  return router.observe({
    onAdd: (w) => logger.info({ worker: w.id, url: w.url, engine: w.engine }, 'worker added'),
    onRemove: (w) => logger.info({ worker: w.id, inFlight: w.inFlight }, 'worker removed'),
    onHealthChange: (w, healthy, reason) =>
      (healthy ? logger.info : logger.warn).call(
        logger,
        { worker: w.id, healthy, reason },
        healthy ? 'worker healthy' : 'worker unhealthy',
      ),
    onNoHealthyWorker: () => logger.debug({}, 'no healthy worker for a request'),
    onPick: (lease, policy, ns) => logger.debug({ worker: lease.worker.id, policy, pickNs: ns }, 'picked'),
  });
}
