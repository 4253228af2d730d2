import type { Worker } from '../core/worker.js';
import { MAX_KV, freshKvUsage } from './kv-usage.js';
import type { Policy, PolicyEnv } from './policy.js';

export interface LeastLoadOptions {
  lambda: number;
}

/**
 * score = in_flight + lambda * k / (1 - k), lowest wins.
 *
 * in_flight is the router's own live count (it moves on every pick, so a burst between two polls
 * spreads); k is the last fresh KV usage, 0 when missing, stale or non-finite. The barrier term is
 * negligible at low k and explodes towards k = 1, which is exactly where an engine starts
 * queueing and preempting. Ties are broken uniformly at random (reservoir sampling, no allocation).
 */
export class LeastLoadPolicy implements Policy {
  readonly name = 'least_load';
  readonly needsBody = false;
  readonly lambda: number;
  readonly #env: PolicyEnv;

  constructor(options: LeastLoadOptions, env: PolicyEnv) {
    this.lambda = options.lambda;
    this.#env = env;
  }

  score(worker: Worker): number {
    return this.#score(worker, this.#env.now());
  }

  #score(worker: Worker, now: number): number {
    const k = freshKvUsage(worker, now, this.#env.staleAfterMs) ?? 0;
    return worker.inFlight + (this.lambda * k) / (1 - k);
  }

  select(candidates: readonly Worker[]): Worker | undefined {
    // The scoring is written out here rather than calling score(): this loop runs over every
    // candidate on every pick, and keeping the doubles inside one function lets V8 leave them unboxed.
    const now = this.#env.now();
    const staleAfterMs = this.#env.staleAfterMs;
    const lambda = this.lambda;
    let best: Worker | undefined;
    let bestScore = Infinity;
    let ties = 0;
    for (let i = 0; i < candidates.length; i++) {
      const w = candidates[i] as Worker;
      let s = w.inFlight;
      const load = w.load;
      if (load !== undefined && now - load.at <= staleAfterMs) {
        let k = load.kvUsage;
        if (k !== undefined && k > 0 && k === k && k !== Infinity) {
          if (k > MAX_KV) k = MAX_KV;
          s += (lambda * k) / (1 - k);
        }
      }
      if (s < bestScore) {
        best = w;
        bestScore = s;
        ties = 1;
      } else if (s === bestScore) {
        ties += 1;
        if (this.#env.rng() * ties < 1) best = w;
      }
    }
    return best;
  }
}
