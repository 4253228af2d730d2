import type { Worker } from '../../core/worker.js';
import type { RequestContext } from '../policy.js';

/** What a scorer may read besides the workers: time (for staleness) and the stale window. */
export interface ScorerEnv {
  now: () => number;
  staleAfterMs: number;
}

/**
 * One signal of the weighted policy, in the Gateway API Inference Extension's style: it writes a
 * score in [0, 1] per candidate into `out` (higher is better), so signals with different units
 * can be summed with weights.
 */
export interface Scorer {
  readonly name: string;
  score(candidates: readonly Worker[], ctx: RequestContext, out: Float64Array): void;
  /** Told the winner of each pick, for scorers that learn from routing (prefix). */
  onPick?(worker: Worker, ctx: RequestContext): void;
  onRemove?(workerId: string): void;
}

/**
 * Min-max normalization where less is better: the minimum scores 1, the maximum 0; when all values
 * are equal every candidate scores 1 (no signal means no preference).
 */
export function minMaxLowerIsBetter(values: Float64Array, n: number, out: Float64Array): void {
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = values[i] as number;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const range = max - min;
  for (let i = 0; i < n; i++) out[i] = range > 0 ? (max - (values[i] as number)) / range : 1;
}

/** The load report if it is fresh, else undefined. */
export function freshLoad(worker: Worker, env: ScorerEnv) {
  const load = worker.load;
  return load !== undefined && env.now() - load.at <= env.staleAfterMs ? load : undefined;
}
