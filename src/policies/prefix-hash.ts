import type { Worker } from '../core/worker.js';
import { CandidateRing, hashString } from './hash-ring.js';
import { leastInFlight } from './least-in-flight.js';
import type { Policy, PolicyEnv, RequestContext } from './policy.js';

export interface PrefixHashOptions {
  /** Characters of the prompt that are hashed (default 256): requests sharing them share a worker. */
  prefixChars: number;
  /** Bounded-load factor c >= 1 (default 1.25): how far above the mean a worker may run. */
  loadFactor: number;
  /** Ring points per worker (default 150). */
  virtualNodes: number;
}

/**
 * prefix_hash: the first `prefixChars` characters of the prompt hashed onto a ring of the candidates,
 * so requests sharing a system prompt or conversation head land where that prefix is already cached,
 * with no per-request state. Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam
 * 2018) stops a hot prefix from swamping its worker. With n candidates and T requests in flight on
 * them, a worker is acceptable when
 *
 *   inFlight + 1 <= ceil(loadFactor * (T + 1) / n)
 *
 * i.e. with this request counted it stays within loadFactor times the mean. The + 1 counts the
 * request being placed, so an idle fleet accepts (capacity ceil(c / n) = 1), and for c >= 1 the least
 * loaded worker always fits. The ring is walked clockwise to the first acceptable worker; if none
 * (only possible for c < 1), the least in-flight worker. No prompt: least in-flight.
 */
export class PrefixHashPolicy implements Policy {
  readonly name = 'prefix_hash';
  readonly needsBody = true;
  readonly options: PrefixHashOptions;
  readonly #env: PolicyEnv;
  readonly #ring: CandidateRing;
  #capacity = 0;
  #candidates: readonly Worker[] = [];
  readonly #accept = (i: number): boolean => (this.#candidates[i] as Worker).inFlight + 1 <= this.#capacity;

  constructor(options: PrefixHashOptions, env: PolicyEnv) {
    if (!Number.isInteger(options.prefixChars) || options.prefixChars < 1) {
      throw new RangeError(`prefixChars must be a positive integer, got ${options.prefixChars}`);
    }
    if (!(options.loadFactor > 0)) throw new RangeError(`loadFactor must be > 0, got ${options.loadFactor}`);
    this.options = options;
    this.#env = env;
    this.#ring = new CandidateRing(options.virtualNodes);
  }

  select(candidates: readonly Worker[], ctx: RequestContext): Worker | undefined {
    const n = candidates.length;
    if (n === 0) return undefined;
    const prompt = ctx.prompt;
    if (!prompt) return leastInFlight(candidates, this.#env);
    let total = 0;
    for (let i = 0; i < n; i++) total += (candidates[i] as Worker).inFlight;
    this.#capacity = Math.ceil((this.options.loadFactor * (total + 1)) / n);
    this.#candidates = candidates;
    const hash = hashString(prompt, Math.min(prompt.length, this.options.prefixChars));
    const index = this.#ring.ringFor(candidates).walk(hash, this.#accept);
    this.#candidates = [];
    return index >= 0 ? candidates[index] : leastInFlight(candidates, this.#env);
  }
}
