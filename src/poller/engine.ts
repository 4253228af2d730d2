import type { LoadSnapshot } from '../core/load-snapshot.js';
import type { EngineName, Worker } from '../core/worker.js';
import type { LimitedResponse } from './fetch-limited.js';

/** What a load source may do during one poll: GET a path on its worker, read the clock. */
export interface ReadContext {
  /**
   * GETs `path` (with query) on the worker with the poller's timeout, size cap and auth header.
   * Resolves with any status; rejects only with PollRequestError or PollCancelledError.
   */
  get(path: string): Promise<LimitedResponse>;
  /** Epoch milliseconds, the router's clock: snapshots are stamped with it. */
  now(): number;
}

/**
 * One worker's view of its engine's load endpoint. Created per worker because some engines need
 * memory between polls (a counter's previous value for a rate, which endpoint answered).
 */
export interface LoadSource {
  /** The protocol being read; for `auto`, undefined until detection settles. */
  readonly engine: EngineName | undefined;
  /**
   * One poll. Resolves with the new snapshot, or undefined for health-only engines. Rejects with
   * PollRequestError (the worker did not answer usefully), LoadParseError or PrometheusParseError
   * (it answered garbage), or PollCancelledError.
   */
  read(ctx: ReadContext): Promise<LoadSnapshot | undefined>;
}

/** Builds the LoadSource for a worker; one per engine protocol. */
export type LoadSourceFactory = (worker: Worker) => LoadSource;
