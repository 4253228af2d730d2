import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouterMetrics } from '../metrics/router-metrics.js';
import type { Router } from '../router.js';
import { statusRequestHandler } from './status-server.js';

type Next = (err?: unknown) => void;
type Handler = (req: IncomingMessage, res: ServerResponse, next: Next) => void;

/**
 * For Express users who serve status on their own app: `app.use(statusHandler(router, metrics))`
 * answers `/metrics`, `/healthz`, `/readyz` and `/workers` and passes everything else on.
 */
export function statusHandler(router: Router, metrics?: RouterMetrics): Handler {
  const handle = statusRequestHandler(router, metrics);
  return (req, res, next) => {
    // Mounted under a path, Express rewrites req.url to the part below the mount point.
    handle(req, res).then((handled) => {
      if (!handled) next();
    }, next);
  };
}

/** `app.get('/metrics', metricsHandler(metrics))`: just the Prometheus text. */
export function metricsHandler(metrics: RouterMetrics): Handler {
  return (_req, res, next) => {
    metrics.text().then((text) => {
      res.writeHead(200, { 'content-type': metrics.contentType });
      res.end(text);
    }, next);
  };
}
