import { LlrError } from '../core/errors.js';
import type { PollResult } from './poll-result.js';

/** The Prometheus text exposition could not be parsed; `line` is 1-based. */
export class PrometheusParseError extends LlrError {
  readonly line: number;

  constructor(line: number, reason: string) {
    super('LLR_PROMETHEUS_PARSE', `line ${line}: ${reason}`);
    this.line = line;
  }
}

/**
 * An engine answered, but with a payload we cannot trust: bad JSON, a NaN or negative count, a
 * usage above 1. The poll fails with `parse_error`; the worker stays in rotation.
 */
export class LoadParseError extends LlrError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LLR_LOAD_PARSE', message, options);
  }
}

/** A poll request failed before a usable answer: network error, timeout, oversized body, bad status. */
export class PollRequestError extends LlrError {
  readonly result: Exclude<PollResult, 'ok' | 'parse_error'>;
  /** HTTP status for `http_error`. */
  readonly status: number | undefined;

  constructor(
    result: Exclude<PollResult, 'ok' | 'parse_error'>,
    message: string,
    options?: { cause?: unknown; status?: number },
  ) {
    super('LLR_POLL_FAILED', message, options);
    this.result = result;
    this.status = options?.status;
  }

  /**
   * Whether the failure says the worker itself is in trouble. Network errors, timeouts and 5xx do;
   * a 4xx or an oversized body means it answered, so it keeps serving while we cannot read its load.
   */
  get countsAgainstHealth(): boolean {
    if (this.result === 'error' || this.result === 'timeout') return true;
    return this.result === 'http_error' && (this.status ?? 0) >= 500;
  }
}

/** The poll was abandoned because the poller stopped or the worker was removed; never reported. */
export class PollCancelledError extends LlrError {
  constructor() {
    super('LLR_POLL_CANCELLED', 'poll cancelled');
  }
}
