import type { Worker } from '../core/worker.js';
import { CandidateRing, hashString } from './hash-ring.js';
import type { Policy, PolicyEnv, RequestContext } from './policy.js';
import { routingKeyReader } from './routing-key.js';

export interface ConsistentHashingOptions {
  /** Headers holding the routing key, tried in order before `authorization` (default x-session-id, x-routing-key). */
  headers: readonly string[];
  /** Ring points per worker (default 150): more points, more even shares, slower rebuilds. */
  virtualNodes: number;
}

/**
 * consistent_hashing: the routing key (ctx.routingKey, else a configured header, else
 * `authorization`) hashed onto a ring of the healthy candidates, so a session keeps hitting the same
 * worker (and its KV cache) without any per-key state. Adding a worker moves only the keys its arcs
 * take (about 1/N); an unhealthy worker's keys go to the next worker clockwise and come back when it
 * recovers. A request without a key goes to a random worker.
 */
export class ConsistentHashingPolicy implements Policy {
  readonly name = 'consistent_hashing';
  readonly needsBody = false;
  readonly options: ConsistentHashingOptions;
  readonly #env: PolicyEnv;
  readonly #ring: CandidateRing;
  readonly #key: (ctx: RequestContext) => string | undefined;

  constructor(options: ConsistentHashingOptions, env: PolicyEnv) {
    this.options = options;
    this.#env = env;
    this.#ring = new CandidateRing(options.virtualNodes);
    this.#key = routingKeyReader(options.headers);
  }

  select(candidates: readonly Worker[], ctx: RequestContext): Worker | undefined {
    if (candidates.length === 0) return undefined;
    const key = this.#key(ctx);
    if (key === undefined) return candidates[Math.floor(this.#env.rng() * candidates.length)];
    return candidates[this.#ring.ringFor(candidates).owner(hashString(key))];
  }
}
