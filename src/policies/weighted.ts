import type { Worker } from '../core/worker.js';
import type { Policy, PolicyEnv, RequestContext } from './policy.js';
import { IN_FLIGHT_SCORER, InFlightScorer } from './scorers/in-flight.js';
import { KV_SCORER, KvScorer } from './scorers/kv.js';
import { QUEUE_SCORER, QueueScorer } from './scorers/queue.js';
import { PREFIX_SCORER, PrefixScorer } from './scorers/prefix.js';
import type { Scorer } from './scorers/scorer.js';

export type ScorerName =
  typeof QUEUE_SCORER | typeof KV_SCORER | typeof IN_FLIGHT_SCORER | typeof PREFIX_SCORER;

export interface WeightedScorerConfig {
  name: ScorerName;
  weight: number;
}

/**
 * The Gateway API Inference Extension's default chain: queue depth 2, KV usage 2, prefix cache 3.
 * Our benchmark's anchor.
 */
export const GIE_PRESET: readonly WeightedScorerConfig[] = [
  { name: QUEUE_SCORER, weight: 2 },
  { name: KV_SCORER, weight: 2 },
  { name: PREFIX_SCORER, weight: 3 },
];

/** The same chain without the prefix scorer: load only, and no need to read request bodies. */
export const GIE_LOAD_PRESET: readonly WeightedScorerConfig[] = GIE_PRESET.filter(
  (s) => s.name !== PREFIX_SCORER,
);

export const WEIGHTED_PRESETS = { gie: GIE_PRESET, gie_load: GIE_LOAD_PRESET } as const;

/** Prompt characters the prefix scorer remembers per worker. */
const PREFIX_MEMORY_CHARS = 2_000_000;

const FACTORIES: Record<ScorerName, (env: PolicyEnv) => Scorer> = {
  [QUEUE_SCORER]: (env) => new QueueScorer(env),
  [KV_SCORER]: (env) => new KvScorer(env),
  [IN_FLIGHT_SCORER]: () => new InFlightScorer(),
  [PREFIX_SCORER]: () => new PrefixScorer({ maxCharsPerWorker: PREFIX_MEMORY_CHARS }),
};

/**
 * Weighted sum of normalized scorers, highest total wins, ties at random: the Inference Extension
 * and AIBrix scheduling style, so our own policies can be measured against that algorithm.
 */
export class WeightedPolicy implements Policy {
  readonly name = 'weighted';
  readonly needsBody: boolean;
  readonly #scorers: { scorer: Scorer; weight: number }[];
  readonly #env: PolicyEnv;
  #totals = new Float64Array(16);
  #scratch = new Float64Array(16);

  constructor(scorers: readonly WeightedScorerConfig[], env: PolicyEnv) {
    this.#scorers = scorers.map((s) => ({ scorer: FACTORIES[s.name](env), weight: s.weight }));
    this.needsBody = scorers.some((s) => s.name === PREFIX_SCORER);
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
    if (best !== undefined) for (const { scorer } of this.#scorers) scorer.onPick?.(best, ctx);
    return best;
  }

  onRemove(workerId: string): void {
    for (const { scorer } of this.#scorers) scorer.onRemove?.(workerId);
  }
}
