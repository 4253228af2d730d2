import type { Worker } from './worker.js';

/** How a routed request ended, for passive health and metrics. */
export type LeaseOutcome = 'success' | 'failure' | 'cancelled';

export type ReleaseHook = (lease: Lease, outcome: LeaseOutcome) => void;

/**
 * One routed request's claim on a worker. The pick already counted it in `worker.inFlight`;
 * `release()` gives it back exactly once, whatever path (finish, abort, error) gets there first.
 */
export class Lease {
  readonly worker: Worker;
  #released = false;
  readonly #onRelease: ReleaseHook | undefined;

  constructor(worker: Worker, onRelease?: ReleaseHook) {
    this.worker = worker;
    this.#onRelease = onRelease;
  }

  get released(): boolean {
    return this.#released;
  }

  /** Returns true the first time, false (and does nothing) afterwards. */
  release(outcome: LeaseOutcome = 'success'): boolean {
    if (this.#released) return false;
    this.#released = true;
    if (this.worker.inFlight > 0) this.worker.inFlight -= 1;
    this.#onRelease?.(this, outcome);
    return true;
  }
}
