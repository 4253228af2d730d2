import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import { LlrError, NoHealthyWorkerError } from '../core/errors.js';
import type { Lease, LeaseOutcome } from '../core/lease.js';
import type { RequestContext } from '../policies/policy.js';
import type { Router } from '../router.js';
import { ClientGoneError, bodyConsumed, declaredLength, hasBody, readBody, reserializeBody } from './body.js';
import {
  BodyTooLargeError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
  sendError,
  type TimeoutKind,
} from './errors.js';
import type { ProxyObserver, UpstreamErrorEvent } from './observer.js';
import type { MiddlewareOptions } from './options.js';
import type { PathRewriter } from './path-rewrite.js';
import { proxyTarget, type ProxyTarget } from './proxy-target.js';
import { parseJsonBody } from '../policies/body-fields.js';
import { requestContext } from './request-context.js';

/** The first try plus one retry on another worker. */
export const MAX_ATTEMPTS = 2;

export type ClientRequestLike = IncomingMessage & { originalUrl?: string; body?: unknown };
export type Next = (err?: unknown) => void;
export type ProxyHandler = (req: IncomingMessage, res: ServerResponse, next: Next) => Promise<void>;

/** What every exchange of one middleware shares. */
export interface ExchangeShared {
  router: Router;
  /** The http-proxy-middleware instance for a worker's protocol (each has its own agent). */
  proxy(protocol: string): ProxyHandler;
  options: MiddlewareOptions;
  rewrite: PathRewriter;
  observers: readonly ProxyObserver[];
}

const EXCHANGE = Symbol('llr.exchange');
type Tagged = IncomingMessage & { [EXCHANGE]?: Exchange };

/** The exchange a request belongs to, for http-proxy events that only carry the request. */
export function exchangeOf(req: IncomingMessage): Exchange | undefined {
  return (req as Tagged)[EXCHANGE];
}

/**
 * One client request from arrival to the end of its response, across up to MAX_ATTEMPTS leases.
 * Each lease is released exactly once: on failure when its attempt fails, otherwise when the
 * client response closes (success, cancelled, or failure for a 5xx or a cut stream).
 */
export class Exchange {
  readonly #req: ClientRequestLike;
  readonly #res: ServerResponse;
  readonly #next: Next;
  readonly #shared: ExchangeShared;
  readonly #entryUrl: string | undefined;
  readonly #targetPath: string;
  #routing: RequestContext = {};
  /** Bytes we send ourselves; undefined means http-proxy streams the request through. */
  #body: Buffer | undefined;
  /** The body differs from what the client sent (re-serialized after an earlier body parser). */
  #rewritten = false;
  #replayable = false;
  #attempts = 0;
  #lease: Lease | undefined;
  #target: ProxyTarget | undefined;
  #proxyReq: ClientRequest | undefined;
  #proxyRes: IncomingMessage | undefined;
  #responded = false;
  #upstreamFailed = false;
  #timeout: UpstreamTimeoutError | undefined;
  #connectTimer: NodeJS.Timeout | undefined;
  #totalTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(req: ClientRequestLike, res: ServerResponse, next: Next, shared: ExchangeShared) {
    this.#req = req;
    this.#res = res;
    this.#next = next;
    this.#shared = shared;
    this.#entryUrl = req.url;
    // Workers expect the path the client used (/v1/completions), not the one left after the mount.
    this.#targetPath = shared.rewrite(req.originalUrl ?? req.url ?? '/', req);
    (req as Tagged)[EXCHANGE] = this;
    res.once('close', this.#onClose);
  }

  /** The target of the current attempt, for http-proxy-middleware's `router` option. */
  get target(): ProxyTarget | undefined {
    return this.#target;
  }

  start(): void {
    const req = this.#req;
    const { router, options } = this.#shared;
    const needsBody = router.needsBody;
    if (bodyConsumed(req)) {
      let body: Buffer;
      try {
        body = reserializeBody(req);
      } catch (err) {
        this.#fail(err);
        return;
      }
      this.#useBody(body, true);
      const parsed = needsBody
        ? typeof req.body === 'object' && req.body !== null && !Buffer.isBuffer(req.body)
          ? req.body
          : parseJsonBody(body, req.headers['content-type'])
        : undefined;
      this.#route(requestContext(req, parsed));
      return;
    }
    if (!hasBody(req)) {
      this.#replayable = true;
      this.#route(requestContext(req));
      return;
    }
    const length = declaredLength(req);
    const bufferForRetry =
      options.retry.enabled && length !== undefined && length <= options.retry.maxBodyBytes;
    if (!needsBody && !bufferForRetry) {
      this.#route(requestContext(req));
      return;
    }
    readBody(req, needsBody ? options.maxBodyBytes : options.retry.maxBodyBytes).then(
      (body) => {
        if (this.#closed) return;
        this.#useBody(body, false);
        this.#route(
          requestContext(req, needsBody ? parseJsonBody(body, req.headers['content-type']) : undefined),
        );
      },
      (err: unknown) => {
        if (!(err instanceof ClientGoneError)) this.#fail(err);
      },
    );
  }

  #useBody(body: Buffer, rewritten: boolean): void {
    this.#body = body;
    this.#rewritten = rewritten;
    this.#replayable = true;
    // We hold the whole body, so there is nothing left to continue; and http-proxy skips its
    // proxyReq event (where we write the body) for requests that still carry `expect`.
    if (this.#req.headers.expect !== undefined) delete this.#req.headers.expect;
  }

  #route(routing: RequestContext): void {
    this.#routing = routing;
    this.#attempt();
  }

  #attempt(): void {
    if (this.#closed) return;
    let lease: Lease;
    try {
      lease = this.#shared.router.pick(this.#routing);
    } catch (err) {
      this.#fail(err);
      return;
    }
    this.#attempts += 1;
    this.#lease = lease;
    this.#target = proxyTarget(lease.worker);
    this.#responded = false;
    this.#timeout = undefined;
    this.#proxyReq = undefined;
    const { proxyTimeoutMs } = this.#shared.options.timeouts;
    if (proxyTimeoutMs > 0) {
      this.#totalTimer = setTimeout(() => this.#onTimeout('total', proxyTimeoutMs), proxyTimeoutMs);
    }
    this.#req.url = this.#targetPath;
    void this.#shared.proxy(this.#target.protocol ?? 'http:')(this.#req, this.#res, this.#onProxyNext);
  }

  /** http-proxy created the upstream request and gave it a socket; headers are not sent yet. */
  onProxyReq(proxyReq: ClientRequest, target: unknown): void {
    if (target !== this.#target) return;
    if (this.#closed) {
      proxyReq.destroy();
      return;
    }
    this.#proxyReq = proxyReq;
    const apiKey = (this.#lease as Lease).worker.apiKey;
    if (apiKey !== undefined) proxyReq.setHeader('authorization', `Bearer ${apiKey}`);
    const body = this.#body;
    if (body !== undefined) {
      // The request stream has already ended, so http-proxy's pipe only ends proxyReq, one tick
      // after this event: the body written here goes first.
      proxyReq.setHeader('content-length', body.length);
      proxyReq.removeHeader('transfer-encoding');
      if (this.#rewritten) proxyReq.removeHeader('content-encoding');
      if (body.length > 0) proxyReq.write(body);
    }
    const { connectTimeoutMs, idleTimeoutMs } = this.#shared.options.timeouts;
    const socket = proxyReq.socket;
    if (connectTimeoutMs > 0 && socket !== null && socket.connecting) {
      this.#connectTimer = setTimeout(() => this.#onTimeout('connect', connectTimeoutMs), connectTimeoutMs);
      socket.once('connect', this.#clearConnectTimer);
    }
    if (idleTimeoutMs > 0) proxyReq.setTimeout(idleTimeoutMs, () => this.#onTimeout('idle', idleTimeoutMs));
  }

  /** Response headers arrived: from here on nothing is retried. */
  onProxyRes(proxyRes: IncomingMessage): void {
    if (this.#closed) return;
    this.#responded = true;
    this.#proxyRes = proxyRes;
    this.#clearConnectTimer();
    // Connection is hop-by-hop (RFC 9110 7.6.1). Forwarded, a worker's `close` (always sent when
    // there is no upstream keep-alive) would close the client's keep-alive connection too;
    // without it http-proxy answers with the client's own preference.
    delete proxyRes.headers.connection;
    const worker = (this.#lease as Lease).worker;
    const status = proxyRes.statusCode ?? 0;
    if (status >= 500) {
      this.#upstreamFailed = true;
      this.#shared.router.reportFailure(worker, 'status');
    }
    for (const o of this.#shared.observers) {
      if (o.onUpstreamResponse) guard(() => o.onUpstreamResponse?.({ worker, status }));
    }
    proxyRes.once('close', () => {
      // http-proxy pipes proxyRes into res and never ends res when the worker dies mid-stream:
      // cut the client off too, so it sees a truncated response instead of waiting forever.
      if (!proxyRes.complete && !this.#closed && !this.#clientGone()) {
        this.#cut(new Error('upstream response was cut short'));
      }
    });
  }

  /** http-proxy reports a failure of the upstream request (or of the client request). */
  onError(err: Error, target: unknown): void {
    if (target !== this.#target || this.#closed) return;
    // The client went away: the close handler releases the lease as cancelled.
    if (this.#clientGone()) return;
    if (this.#responded) {
      this.#cut(this.#timeout ?? err);
      return;
    }
    this.#clearTimers();
    const lease = this.#lease as Lease;
    const worker = lease.worker;
    const timeout = this.#timeout;
    // A connect timeout means the worker is unreachable; an idle or total timeout only that it is slow.
    const connectFailure = timeout === undefined || timeout.kind === 'connect';
    // A pooled keep-alive socket the worker closed just as we reused it says nothing about the
    // worker's health (Node's documented race); a retry opens a fresh connection.
    const staleSocket = timeout === undefined && this.#proxyReq?.reusedSocket === true;
    lease.release('failure');
    if (connectFailure && !staleSocket) this.#shared.router.reportFailure(worker, 'connect');
    const retried =
      connectFailure &&
      this.#replayable &&
      this.#shared.options.retry.enabled &&
      this.#attempts < MAX_ATTEMPTS;
    this.#notifyError({ worker, phase: 'request', error: timeout ?? err, retried });
    if (retried) this.#attempt();
    else if (timeout !== undefined) this.#fail(timeout);
    // With every worker now out of rotation, say so (503, retry-after) rather than blame this one.
    else if (this.#shared.router.pool.candidates().length === 0) this.#fail(new NoHealthyWorkerError());
    else this.#fail(new UpstreamUnavailableError(worker.id, err));
  }

  /**
   * The client's socket is already destroyed, though its close events may not have run yet (http-proxy
   * aborts the upstream request on the client's 'aborted', which can come first).
   */
  #clientGone(): boolean {
    return this.#res.destroyed || this.#req.socket.destroyed;
  }

  /** A failure after the response started: nothing can be retried, the client sees a cut stream. */
  #cut(error: Error): void {
    if (this.#upstreamFailed && this.#res.destroyed) return;
    this.#upstreamFailed = true;
    this.#notifyError({ worker: (this.#lease as Lease).worker, phase: 'response', error, retried: false });
    this.#res.destroy();
  }

  #onTimeout(kind: TimeoutKind, ms: number): void {
    if (this.#closed) return;
    const err = new UpstreamTimeoutError(kind, ms);
    if (this.#responded) {
      this.#cut(err);
      return;
    }
    this.#timeout = err;
    // Destroying with our error makes http-proxy report it back through onError with this target.
    if (this.#proxyReq) this.#proxyReq.destroy(err);
    else this.onError(err, this.#target);
  }

  readonly #clearConnectTimer = (): void => {
    if (this.#connectTimer !== undefined) clearTimeout(this.#connectTimer);
    this.#connectTimer = undefined;
  };

  #clearTimers(): void {
    this.#clearConnectTimer();
    if (this.#totalTimer !== undefined) clearTimeout(this.#totalTimer);
    this.#totalTimer = undefined;
  }

  readonly #onClose = (): void => {
    this.#closed = true;
    this.#clearTimers();
    const finished = this.#res.writableFinished;
    if (!finished) {
      // The client is gone (or we cut it off): stop the worker generating for nobody.
      this.#proxyReq?.destroy();
      this.#proxyRes?.destroy();
    }
    const outcome: LeaseOutcome = this.#upstreamFailed ? 'failure' : finished ? 'success' : 'cancelled';
    this.#lease?.release(outcome);
  };

  /** http-proxy-middleware calls next(err) only when it could not start proxying at all. */
  readonly #onProxyNext = (err?: unknown): void => {
    this.#clearTimers();
    this.#lease?.release('failure');
    this.#req.url = this.#entryUrl;
    this.#next(err);
  };

  /** Answers with our JSON error when it is one of ours; anything else goes to Express's error handling. */
  #fail(err: unknown): void {
    if (this.#closed) return;
    if (!(err instanceof LlrError)) {
      this.#req.url = this.#entryUrl;
      this.#next(err);
      return;
    }
    const { router } = this.#shared;
    const status = sendError(this.#res, err, {
      retryAfterSecs: Math.max(1, Math.ceil(router.config.poller.intervalSecs)),
      close: err instanceof BodyTooLargeError,
    });
    for (const o of this.#shared.observers) {
      if (o.onReject) guard(() => o.onReject?.({ status, code: err.code }));
    }
  }

  #notifyError(event: UpstreamErrorEvent): void {
    for (const o of this.#shared.observers) {
      if (o.onUpstreamError) guard(() => o.onUpstreamError?.(event));
    }
  }
}

/**
 * Observers run inside http-proxy's event handlers, where a throw would escape as an uncaught
 * exception and take the process down; a broken metrics hook must not do that.
 */
function guard(fn: () => void): void {
  try {
    fn();
  } catch {
    // deliberately ignored, see above
  }
}
