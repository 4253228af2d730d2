import type { Worker } from '../core/worker.js';
import type { Policy, PolicyEnv, RequestContext } from './policy.js';
import { IN_FLIGHT_SCORER, InFlightScorer } from './scorers/in-flight.js';
import { KV_SCORER, KvScorer } from './scorers/kv.js';
import { QUEUE_SCORER, QueueScorer } from './scorers/queue.js';
import type { Scorer } from './scorers/scorer.js';

export type ScorerName = typeof QUEUE_SCORER | typeof KV_SCORER | typeof IN_FLIGHT_SCORER;

export interface WeightedScorerConfig {
  name: ScorerName;
  weight: number;
}

/**
 * The Gateway API Inference Extension's default chain: queue depth and KV usage, weights 2:2 (its
 * prefix scorer, weight 3, joins once we have one). Our benchmark's anchor.
 */
export const GIE_PRESET: readonly WeightedScorerConfig[] = [
  { name: QUEUE_SCORER, weight: 2 },
  { name: KV_SCORER, weight: 2 },
];

const FACTORIES: Record<ScorerName, (env: PolicyEnv) => Scorer> = {
  [QUEUE_SCORER]: (env) => new QueueScorer(env),
  [KV_SCORER]: (env) => new KvScorer(env),
  [IN_FLIGHT_SCORER]: () => new InFlightScorer(),
};

/**
 * Weighted sum of normalized scorers, highest total wins, ties at random: the Inference Extension
 * and AIBrix scheduling style, so our own policies can be measured against that algorithm.
 */
export class WeightedPolicy implements Policy {
  readonly name = 'weighted';
  readonly needsBody = false;
  readonly #scorers: { scorer: Scorer; weight: number }[];
  readonly #env: PolicyEnv;
  #totals = new Float64Array(16);
  #scratch = new Float64Array(16);

  constructor(scorers: readonly WeightedScorerConfig[], env: PolicyEnv) {
    this.#scorers = scorers.map((s) => ({ scorer: FACTORIES[s.name](env), weight: s.weight }));
    this.#env = env;
  }

  select(candidates: readonly Worker[], ctx: RequestContext): Worker | undefined {
    const n = candidates.length;
    if (this.#totals.length < n) {
      this.#totals = new Float64Array(n * 2);
      this.#scratch = new Float64Array(n * 2);
    }
    this.#totals.fill(0, 0, n);
    for (const { scorer, weight } of this.#scorers) {
      scorer.score(candidates, ctx, this.#scratch);
      for (let i = 0; i < n; i++)
        this.#totals[i] = (this.#totals[i] as number) + weight * (this.#scratch[i] as number);
    }
    let best: Worker | undefined;
    let bestScore = -Infinity;
    let ties = 0;
    for (let i = 0; i < n; i++) {
      const s = this.#totals[i] as number;
      if (s > bestScore) {
        best = candidates[i];
        bestScore = s;
        ties = 1;
      } else if (s === bestScore) {
        ties += 1;
        if (this.#env.rng() * ties < 1) best = candidates[i];
      }
    }
    return best;
  }

  onRemove(workerId: string): void {
    for (const { scorer } of this.#scorers) scorer.onRemove?.(workerId);
  }
}
