import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RouterMetrics } from '../metrics/router-metrics.js';
import type { Router } from '../router.js';

/** A handler that answers the requests it owns and returns false for the rest. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

export interface StatusServerOptions {
  port: number;
  host?: string;
  /** Tried before the status routes; the admin API plugs in here. */
  admin?: RequestHandler;
}

export interface StatusServer {
  readonly port: number;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: string, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}

const json = (value: unknown): string => `${JSON.stringify(value)}\n`;

/**
 * The handler behind the metrics port: `/metrics`, `/healthz`, `/readyz`, `/workers`. Returns false
 * for paths it does not own, so it can sit in front of other handlers (the admin API).
 */
export function statusRequestHandler(router: Router, metrics: RouterMetrics | undefined): RequestHandler {
  return async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    switch (path) {
      case '/metrics':
        if (!metrics) return false;
        send(res, 200, await metrics.text(), metrics.contentType);
        return true;
      case '/healthz':
        send(res, 200, json({ status: 'ok' }));
        return true;
      case '/readyz': {
        const healthy = router.pool.candidates().length;
        send(res, healthy > 0 ? 200 : 503, json({ ready: healthy > 0, healthyWorkers: healthy }));
        return true;
      }
      case '/workers':
        send(res, 200, json({ policy: router.policy.name, workers: router.workers() }));
        return true;
      default:
        return false;
    }
  };
}

/** Starts the metrics/status HTTP listener. */
export async function startStatusServer(
  router: Router,
  metrics: RouterMetrics | undefined,
  options: StatusServerOptions,
): Promise<StatusServer> {
  const status = statusRequestHandler(router, metrics);
  const admin = options.admin;
  const handle: RequestHandler = async (req, res) =>
    (admin !== undefined && (await admin(req, res))) || status(req, res);
  const server: Server = createServer((req, res) => {
    handle(req, res).then(
      (handled) => {
        if (!handled)
          send(
            res,
            404,
            json({ error: { code: 'LLR_NOT_FOUND', message: `no route for ${req.method} ${req.url}` } }),
          );
      },
      (err: Error) => send(res, 500, json({ error: { code: 'LLR_INTERNAL', message: err.message } })),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
