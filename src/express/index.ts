export { leastLoadRouter } from './middleware.js';
export type { LeastLoadMiddleware } from './middleware.js';
export { startProxyServer } from './standalone-proxy.js';
export type { ProxyServer, ProxyServerOptions } from './standalone-proxy.js';
export { middlewareOptionsSchema, parseMiddlewareOptions } from './options.js';
export type {
  MiddlewareOptions,
  MiddlewareOptionsInput,
  PathRewriteFunction,
  PathRewriteRules,
  RetryOptions,
  TimeoutOptions,
} from './options.js';
export type {
  ProxyObserver,
  RejectEvent,
  UpstreamErrorEvent,
  UpstreamPhase,
  UpstreamResponseEvent,
} from './observer.js';
export {
  BodyConsumedError,
  BodyTooLargeError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
} from './errors.js';
export type { TimeoutKind } from './errors.js';
