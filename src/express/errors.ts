import type { ServerResponse } from 'node:http';
import { LlrError, NoHealthyWorkerError } from '../core/errors.js';

/** The request body is over the limit the middleware may buffer for body-aware routing. */
export class BodyTooLargeError extends LlrError {
  constructor(limit: number) {
    super('LLR_BODY_TOO_LARGE', `request body is larger than the ${limit}-byte limit for body-aware routing`);
  }
}

/**
 * An earlier middleware consumed the request stream and left `req.body` in a form we cannot turn
 * back into bytes (e.g. a multipart parser), so there is nothing faithful to forward.
 */
export class BodyConsumedError extends LlrError {
  constructor(reason: string) {
    super('LLR_BODY_CONSUMED', `the request body was consumed by an earlier middleware: ${reason}`);
  }
}

/** The worker could not be reached, or failed before sending a response byte, and no retry was possible. */
export class UpstreamUnavailableError extends LlrError {
  constructor(workerId: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super('LLR_UPSTREAM_UNAVAILABLE', `worker ${workerId} failed before responding: ${reason}`, { cause });
  }
}

export type TimeoutKind = 'connect' | 'idle' | 'total';

/** One of the configured upstream timeouts fired; used both as the destroy reason and the 504 body. */
export class UpstreamTimeoutError extends LlrError {
  readonly kind: TimeoutKind;

  constructor(kind: TimeoutKind, ms: number) {
    super('LLR_UPSTREAM_TIMEOUT', `upstream ${kind} timeout after ${ms} ms`);
    this.kind = kind;
  }
}

/** HTTP status we answer with for each error we raise ourselves. */
export function statusFor(err: LlrError): number {
  switch (err.code) {
    case 'LLR_NO_HEALTHY_WORKER':
      return 503;
    case 'LLR_UNKNOWN_MODEL':
      return 404;
    case 'LLR_BODY_TOO_LARGE':
      return 413;
    case 'LLR_UPSTREAM_TIMEOUT':
      return 504;
    case 'LLR_UPSTREAM_UNAVAILABLE':
      return 502;
    case 'LLR_BODY_CONSUMED':
      return 500;
    default:
      return 500;
  }
}

export interface ErrorReplyOptions {
  /** Seconds for `retry-after` on a 503 (when the next poll may bring a worker back). */
  retryAfterSecs?: number;
  /** Close the connection afterwards, e.g. when an unread oversized body is still arriving. */
  close?: boolean;
}

/**
 * Writes `{"error":{"code","message"}}`. OpenAI-compatible clients read `error.message`; our stable
 * `code` lets callers branch without parsing text. Does nothing if the response already started.
 */
export function sendError(res: ServerResponse, err: LlrError, options: ErrorReplyOptions = {}): number {
  const status = statusFor(err);
  if (res.headersSent || res.destroyed) return status;
  const body = JSON.stringify({ error: { code: err.code, message: err.message } });
  const headers: Record<string, string | number> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  };
  if (err instanceof NoHealthyWorkerError) headers['retry-after'] = options.retryAfterSecs ?? 1;
  if (options.close) headers.connection = 'close';
  res.writeHead(status, headers);
  res.end(body);
  return status;
}
