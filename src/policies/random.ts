import type { Worker } from '../core/worker.js';
import type { Policy, PolicyEnv } from './policy.js';

/** Uniform random choice: the baseline every other policy is measured against. */
export class RandomPolicy implements Policy {
  readonly name = 'random';
  readonly needsBody = false;
  readonly #env: PolicyEnv;

  constructor(env: PolicyEnv) {
    this.#env = env;
  }

  select(candidates: readonly Worker[]): Worker | undefined {
    return candidates[Math.floor(this.#env.rng() * candidates.length)];
  }
}
