import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Router } from '../router.js';
import { leastLoadRouter } from './middleware.js';
import type { MiddlewareOptionsInput } from './options.js';

export interface ProxyServerOptions extends Omit<
  MiddlewareOptionsInput,
  'router' | 'workers' | 'policy' | 'poller'
> {
  /** Defaults to the router's `proxy.port`; 0 picks a free port. */
  port?: number;
  /** Defaults to the router's `host`. */
  host?: string;
  /** How long close() lets in-flight responses (long generations) finish before cutting them. */
  shutdownGraceMs?: number;
}

export interface ProxyServer {
  /** The port actually bound (useful with port 0). */
  readonly port: number;
  readonly server: Server;
  /** Stops accepting, waits up to shutdownGraceMs for in-flight responses, then closes the rest. */
  close(): Promise<void>;
}

/**
 * `least-load-router serve --proxy-port N`: the Express middleware in an app of our own, for teams
 * without Envoy. Starting and stopping the router (polling) stays with its owner.
 */
export async function startProxyServer(
  router: Router,
  options: ProxyServerOptions = {},
): Promise<ProxyServer> {
  const {
    port = router.config.proxy.port,
    host = router.config.host,
    shutdownGraceMs = 10_000,
    ...rest
  } = options;
  const middleware = leastLoadRouter({ ...rest, router });
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(middleware);

  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(port, host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  let closing: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    server,
    close() {
      closing ??= new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), shutdownGraceMs);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }).then(() => middleware.close());
      return closing;
    },
  };
}
