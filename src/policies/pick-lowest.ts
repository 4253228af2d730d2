import type { Worker } from '../core/worker.js';
import type { Rng } from '../core/random.js';

/**
 * The candidate with the lowest score, ties broken uniformly at random by reservoir sampling (no
 * allocation). Both least_load modes write this loop out inline instead: it runs on every pick over
 * every worker, and the inline form avoids a closure per pick and lets V8 keep doubles unboxed.
 */
export function pickLowest(
  candidates: readonly Worker[],
  score: (worker: Worker) => number,
  rng: Rng,
): Worker | undefined {
  let best: Worker | undefined;
  let bestScore = Infinity;
  let ties = 0;
  for (let i = 0; i < candidates.length; i++) {
    const w = candidates[i] as Worker;
    const s = score(w);
    if (s < bestScore) {
      best = w;
      bestScore = s;
      ties = 1;
    } else if (s === bestScore) {
      ties += 1;
      if (rng() * ties < 1) best = w;
    }
  }
  return best;
}
