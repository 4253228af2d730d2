import { NoHealthyWorkerError, UnknownModelError } from '../core/errors.js';
import type { Lease, LeaseOutcome } from '../core/lease.js';
import type { Worker } from '../core/worker.js';
import type { RequestContext } from '../policies/policy.js';
import type { Router } from '../router.js';
import type { ProcessingRequest, ProcessingResponse, ProtocolConfiguration } from './messages.js';
import { contextFromHeaders, findHeader } from './request-context.js';
import { contextWithBody } from './request-body.js';
import {
  continueResponse,
  errorResponse,
  LB_METADATA_NAMESPACE,
  type PickPhase,
  type RouteResponseCache,
} from './responses.js';

export interface ExtProcStreamOptions {
  destinationHeader: string;
  fallbacks: number;
  responses: RouteResponseCache;
}

/**
 * One ext_proc stream, which Envoy opens per HTTP request: turns each ProcessingRequest into its
 * ProcessingResponse (or none, in observability mode) and holds the request's lease until the
 * stream ends, so in-flight covers the whole upstream exchange, streamed generation included.
 */
export class ExtProcStream {
  readonly #router: Router;
  readonly #options: ExtProcStreamOptions;
  #lease: Lease | undefined;
  /** Headers seen, pick waiting for the buffered body a body-aware policy needs. */
  #pendingContext: RequestContext | undefined;
  #protocol: ProtocolConfiguration | undefined;
  #upstreamFailed = false;
  #sawResponse = false;
  #ended = false;

  constructor(router: Router, options: ExtProcStreamOptions) {
    this.#router = router;
    this.#options = options;
  }

  /** The answer to one message from Envoy; undefined when none is to be sent. */
  handle(req: ProcessingRequest): ProcessingResponse | undefined {
    // A message that races the stream's end must not take a lease nobody would release.
    if (this.#ended) return undefined;
    // Envoy only sends protocol_config (1.33+) on a stream's first message.
    this.#protocol ??= req.protocol_config;
    // Envoy ignores answers to an observing filter; it routes by other means, so no pick either.
    if (req.observability_mode) return undefined;
    switch (req.request) {
      case 'request_headers': {
        const headers = req.request_headers;
        const ctx = contextFromHeaders(headers?.headers, this.#options.destinationHeader);
        if (this.#router.needsBody && !headers?.end_of_stream && this.#bodyWillFollow()) {
          this.#pendingContext = ctx;
          return continueResponse('request_headers');
        }
        return this.#route('request_headers', ctx);
      }
      case 'request_body': {
        const pending = this.#pendingContext;
        if (pending === undefined) return continueResponse('request_body');
        this.#pendingContext = undefined;
        return this.#route('request_body', contextWithBody(pending, req.request_body?.body));
      }
      case 'response_headers': {
        this.#sawResponse = true;
        const status = Number(findHeader(req.response_headers?.headers, ':status'));
        if (status >= 500 && status <= 599 && this.#lease && !this.#upstreamFailed) {
          this.#upstreamFailed = true;
          this.#router.reportFailure(this.#servedBy(req) ?? this.#lease.worker, 'status');
        }
        return continueResponse('response_headers');
      }
      case 'response_body':
      case 'response_trailers':
        this.#sawResponse = true;
        return continueResponse(req.request);
      case 'request_trailers':
        return continueResponse(req.request);
      default:
        // A kind newer than our proto (or none at all): nothing we could answer correctly.
        return undefined;
    }
  }

  /**
   * Releases the lease, once, however the stream ended. The outcome comes from what Envoy told us
   * about the upstream, not from how the stream closed: on the server side a half-close and a reset
   * look alike (both end the read side), while a response means the worker answered.
   */
  finish(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#pendingContext = undefined;
    const outcome: LeaseOutcome = this.#upstreamFailed
      ? 'failure'
      : this.#sawResponse
        ? 'success'
        : 'cancelled';
    this.#lease?.release(outcome);
  }

  /**
   * Whether Envoy will send the body in one piece before routing. Without protocol_config (Envoy
   * before 1.33) it cannot tell us, so we trust the operator configured BUFFERED for a body-aware
   * policy; with it, only the buffered modes hold the request until we answer.
   */
  #bodyWillFollow(): boolean {
    const mode = this.#protocol?.request_body_mode;
    return mode === undefined || mode === 'BUFFERED' || mode === 'BUFFERED_PARTIAL';
  }

  /**
   * With fallbacks, Envoy may have retried down the list: Inference Extension data planes name the
   * endpoint that answered in `envoy.lb` / `<header>-served`, so the failure goes to that worker.
   */
  #servedBy(req: ProcessingRequest): Worker | undefined {
    const ns = req.metadata_context?.filter_metadata?.[LB_METADATA_NAMESPACE]?.fields;
    const served = ns?.[`${this.#options.destinationHeader}-served`]?.stringValue;
    return served === undefined ? undefined : this.#router.pool.get(served);
  }

  #route(phase: PickPhase, ctx: RequestContext): ProcessingResponse {
    let lease: Lease;
    let destination: string;
    try {
      if (this.#options.fallbacks > 0) {
        const picked = this.#router.pickWithFallbacks(ctx, this.#options.fallbacks);
        lease = picked.lease;
        destination = lease.worker.id;
        for (const w of picked.fallbacks) destination += `,${w.id}`;
      } else {
        lease = this.#router.pick(ctx);
        destination = lease.worker.id;
      }
    } catch (err) {
      if (err instanceof NoHealthyWorkerError) return errorResponse(503, err);
      if (err instanceof UnknownModelError) return errorResponse(404, err);
      throw err;
    }
    // Envoy sends one request_headers per stream; a second one would be a new request.
    this.#lease?.release('cancelled');
    this.#lease = lease;
    return this.#options.responses.get(phase, destination);
  }
}
