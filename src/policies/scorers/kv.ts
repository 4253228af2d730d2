import type { Worker } from '../../core/worker.js';
import { freshKvUsage } from '../kv-usage.js';
import type { Scorer, ScorerEnv } from './scorer.js';

export const KV_SCORER = 'kv';

/** 1 - KV usage: the emptier cache scores higher. Unknown usage scores 1, as in the Inference Extension. */
export class KvScorer implements Scorer {
  readonly name = KV_SCORER;
  readonly #env: ScorerEnv;

  constructor(env: ScorerEnv) {
    this.#env = env;
  }

  score(candidates: readonly Worker[], _ctx: unknown, out: Float64Array): void {
    const now = this.#env.now();
    for (let i = 0; i < candidates.length; i++) {
      out[i] = 1 - (freshKvUsage(candidates[i] as Worker, now, this.#env.staleAfterMs) ?? 0);
    }
  }
}
