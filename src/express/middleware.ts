import { Agent as HttpAgent, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { Registry } from 'prom-client';
import { createRouter, type Router } from '../router.js';
import {
  Exchange,
  exchangeOf,
  type ClientRequestLike,
  type ExchangeShared,
  type Next,
  type ProxyHandler,
} from './exchange.js';
import type { ProxyObserver } from './observer.js';
import { parseMiddlewareOptions, type MiddlewareOptionsInput } from './options.js';
import { createPathRewriter } from './path-rewrite.js';
import { exchangePlugin } from './proxy-plugin.js';

/** An Express (or plain node:http) request handler that load-balances onto the router's workers. */
export interface LeastLoadMiddleware {
  (req: IncomingMessage, res: ServerResponse, next: Next): void;
  /** The state (pool, policy, health) this middleware routes with; share it with other front doors. */
  readonly router: Router;
  /** The registry given in the options, or a private one; metrics are registered here. */
  readonly metrics: Registry;
  /** Settles when the router's background parts started (immediately for a shared router). */
  readonly ready: Promise<void>;
  /** Adds a proxy observer (upstream errors and responses, our own rejections); returns its remover. */
  observe(observer: ProxyObserver): () => void;
  /**
   * Closes pooled upstream connections and, if this middleware created the router, stops its
   * polling, so the process can exit. A shared router is left to its owner.
   */
  close(): Promise<void>;
}

/**
 * `app.use('/v1', leastLoadRouter({ workers: [...] }))`: picks a worker per request with the
 * router's policy and proxies to it with http-proxy-middleware, streaming both ways.
 * Throws ConfigError (naming the field) for bad options.
 */
export function leastLoadRouter(input: MiddlewareOptionsInput = {}): LeastLoadMiddleware {
  const options = parseMiddlewareOptions(input);
  const owned = options.router === undefined;
  const router =
    options.router ??
    createRouter({ workers: options.workers, policy: options.policy, poller: options.poller });
  const observers: ProxyObserver[] = options.observer ? [options.observer] : [];
  // One proxy per protocol, because http-proxy takes one agent for all targets. maxSockets stays
  // unlimited: a request queued for a socket would let http-proxy end it before we write its body.
  const agents = options.keepAlive
    ? { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) }
    : undefined;
  const proxyFor = (agent: HttpAgent | undefined): ProxyHandler =>
    createProxyMiddleware<IncomingMessage, ServerResponse>({
      // The exchange picked the worker (holding its lease) before calling the proxy.
      router: (req) => exchangeOf(req)?.target,
      changeOrigin: true,
      ...(agent ? { agent } : {}),
      ejectPlugins: true,
      plugins: [exchangePlugin],
    }) as ProxyHandler;
  const httpProxy = proxyFor(agents?.http);
  const httpsProxy = proxyFor(agents?.https);
  const shared: ExchangeShared = {
    router,
    proxy: (protocol) => (protocol === 'https:' ? httpsProxy : httpProxy),
    options,
    rewrite: createPathRewriter(options.pathRewrite),
    observers,
  };

  const ready = owned ? router.start() : Promise.resolve();
  // Callers who never await `ready` must not get an unhandled rejection; those who do still see it.
  ready.catch(() => {});
  let closing: Promise<void> | undefined;

  const handler = (req: IncomingMessage, res: ServerResponse, next: Next): void => {
    new Exchange(req as ClientRequestLike, res, next, shared).start();
  };
  return Object.assign(handler, {
    router,
    metrics: options.metrics ?? new Registry(),
    ready,
    observe(observer: ProxyObserver): () => void {
      observers.push(observer);
      return () => {
        const i = observers.indexOf(observer);
        if (i >= 0) observers.splice(i, 1);
      };
    },
    close(): Promise<void> {
      closing ??= (async () => {
        agents?.http.destroy();
        agents?.https.destroy();
        if (owned) await ready.catch(() => {}).then(() => router.stop());
      })();
      return closing;
    },
  });
}
