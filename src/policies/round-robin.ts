import type { Worker } from '../core/worker.js';
import type { Policy } from './policy.js';

/** Cycles through the current candidates; a changing candidate list just shifts the cycle. */
export class RoundRobinPolicy implements Policy {
  readonly name = 'round_robin';
  readonly needsBody = false;
  #next = 0;

  select(candidates: readonly Worker[]): Worker | undefined {
    if (candidates.length === 0) return undefined;
    const index = this.#next % candidates.length;
    this.#next = (index + 1) % candidates.length;
    return candidates[index];
  }
}
