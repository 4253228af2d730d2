import type { Worker } from '../core/worker.js';
import { freshKvUsage } from './kv-usage.js';
import type { PolicyEnv } from './policy.js';

/**
 * The worker with the fewest in-flight requests (the router's own live count). With `kvTieBreak`, a
 * tie goes to the lower fresh KV usage (missing or stale counts as 0, as in least_load); remaining
 * ties are broken uniformly at random by reservoir sampling, without allocating. Workers whose fresh
 * KV usage is above `maxKv` are passed over unless every candidate is.
 */
export function leastInFlight(
  candidates: readonly Worker[],
  env: PolicyEnv,
  kvTieBreak = false,
  maxKv = Infinity,
): Worker | undefined {
  const readKv = kvTieBreak || maxKv !== Infinity;
  const now = readKv ? env.now() : 0;
  let best: Worker | undefined;
  let bestLoad = Infinity;
  let bestKv = Infinity;
  let ties = 0;
  for (let i = 0; i < candidates.length; i++) {
    const w = candidates[i] as Worker;
    const load = w.inFlight;
    if (load > bestLoad) continue;
    const kv = readKv ? (freshKvUsage(w, now, env.staleAfterMs) ?? 0) : 0;
    if (kv > maxKv) continue;
    const rankKv = kvTieBreak ? kv : 0;
    if (load < bestLoad || rankKv < bestKv) {
      best = w;
      bestLoad = load;
      bestKv = rankKv;
      ties = 1;
    } else if (rankKv === bestKv) {
      ties += 1;
      if (env.rng() * ties < 1) best = w;
    }
  }
  return best === undefined && maxKv !== Infinity ? leastInFlight(candidates, env, kvTieBreak) : best;
}
