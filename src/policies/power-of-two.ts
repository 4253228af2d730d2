import type { Worker } from '../core/worker.js';
import { freshKvUsage } from './kv-usage.js';
import type { Policy, PolicyEnv } from './policy.js';

/**
 * Power of two choices: sample two distinct workers and keep the lighter. KV usage decides when
 * both have a fresh report (it is what predicts the TTFT cliff); otherwise in-flight counts, for
 * both, so a reporting worker is never compared against an unknown one on different scales.
 */
export class PowerOfTwoPolicy implements Policy {
  readonly name = 'power_of_two';
  readonly needsBody = false;
  readonly #env: PolicyEnv;

  constructor(env: PolicyEnv) {
    this.#env = env;
  }

  select(candidates: readonly Worker[]): Worker | undefined {
    const n = candidates.length;
    if (n <= 1) return candidates[0];
    const i = Math.floor(this.#env.rng() * n);
    let j = Math.floor(this.#env.rng() * (n - 1));
    if (j >= i) j += 1;
    const a = candidates[i] as Worker;
    const b = candidates[j] as Worker;
    const now = this.#env.now();
    const ka = freshKvUsage(a, now, this.#env.staleAfterMs);
    const kb = freshKvUsage(b, now, this.#env.staleAfterMs);
    if (ka !== undefined && kb !== undefined && ka !== kb) return ka < kb ? a : b;
    return b.inFlight < a.inFlight ? b : a;
  }
}
