import { PollCancelledError } from './errors.js';

interface Waiter {
  grant: (release: () => void) => void;
  cancel: () => void;
}

/**
 * A counting semaphore: at most `limit` holders at once, the rest wait in FIFO order. A waiter
 * whose signal aborts leaves the queue and rejects with PollCancelledError.
 */
export class ConcurrencyLimit {
  readonly limit: number;
  #active = 0;
  readonly #queue: Waiter[] = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`limit must be an integer >= 1, got ${limit}`);
    this.limit = limit;
  }

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#queue.length;
  }

  /** Resolves with a release function (idempotent) once a slot is free. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new PollCancelledError());
    if (this.#active < this.limit) {
      this.#active += 1;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => waiter.cancel();
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        cancel: () => {
          const i = this.#queue.indexOf(waiter);
          if (i >= 0) this.#queue.splice(i, 1);
          reject(new PollCancelledError());
        },
      };
      this.#queue.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#queue.shift();
      // The slot passes straight to the next waiter, so `active` does not dip and refill.
      if (next) next.grant(this.#releaser());
      else this.#active -= 1;
    };
  }
}
