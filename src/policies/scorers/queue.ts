import type { Worker } from '../../core/worker.js';
import { freshLoad, minMaxLowerIsBetter, type Scorer, type ScorerEnv } from './scorer.js';

export const QUEUE_SCORER = 'queue';

/**
 * Waiting-queue depth from the last report, min-max normalized (shortest queue scores 1). As in
 * the Inference Extension's queue scorer, a worker with no fresh report counts as an empty queue.
 */
export class QueueScorer implements Scorer {
  readonly name = QUEUE_SCORER;
  readonly #env: ScorerEnv;
  #values = new Float64Array(16);

  constructor(env: ScorerEnv) {
    this.#env = env;
  }

  score(candidates: readonly Worker[], _ctx: unknown, out: Float64Array): void {
    const n = candidates.length;
    if (this.#values.length < n) this.#values = new Float64Array(n * 2);
    for (let i = 0; i < n; i++) {
      const waiting = freshLoad(candidates[i] as Worker, this.#env)?.waiting;
      this.#values[i] = waiting !== undefined && waiting >= 0 ? waiting : 0;
    }
    minMaxLowerIsBetter(this.#values, n, out);
  }
}
