import type { Worker } from '../core/worker.js';
import { keyDigest } from './hash-ring.js';
import { leastInFlight } from './least-in-flight.js';
import type { Policy, PolicyEnv, RequestContext } from './policy.js';
import { routingKeyReader } from './routing-key.js';

export const STICKY_SUB_POLICIES = ['random', 'least_in_flight'] as const;
export type StickySubPolicy = (typeof STICKY_SUB_POLICIES)[number];

export interface ManualOptions {
  /** Headers holding the routing key, tried in order before `authorization` (default x-session-id, x-routing-key). */
  headers: readonly string[];
  /** How a new (or orphaned) key picks its worker (default least_in_flight). */
  subPolicy: StickySubPolicy;
  /** A key idle this long forgets its worker; each use refreshes it (default 14400 = 4 h). */
  ttlSecs: number;
  /** Most keys remembered; beyond it the least recently used is forgotten (default 100,000). */
  maxKeys: number;
}

/**
 * Expired keys are swept every SWEEP_EVERY picks, at most SWEEP_BUDGET at a time: twice the rate at
 * which picks can add keys, so they cannot pile up, and no pick pays for a whole idle-out.
 */
const SWEEP_EVERY = 32;
const SWEEP_BUDGET = 64;

interface Binding {
  workerId: string;
  lastUsed: number;
}

/**
 * manual (sticky sessions): the first request of a routing key picks a worker by the sub-policy and
 * later requests with that key go to the same worker until it stops being a candidate (unhealthy,
 * draining, removed) or the key idles past the TTL; then the key is bound afresh. Unlike
 * consistent_hashing, a key does not move when workers join, and does not move back after a
 * recovery. Requests without a key just use the sub-policy.
 *
 * The bindings live in a Map used as an LRU list (a hit is re-inserted at the end), keyed by a 52-bit
 * digest so session ids and bearer tokens are not kept in memory. Because the Map is in last-use
 * order, expired entries sit at its front and are swept from there, a few at a time.
 */
export class ManualPolicy implements Policy {
  readonly name = 'manual';
  readonly needsBody = false;
  readonly options: ManualOptions;
  readonly #env: PolicyEnv;
  readonly #ttlMs: number;
  readonly #key: (ctx: RequestContext) => string | undefined;
  readonly #bindings = new Map<number, Binding>();
  #picks = 0;

  constructor(options: ManualOptions, env: PolicyEnv) {
    if (!(options.ttlSecs > 0)) throw new RangeError(`ttlSecs must be > 0, got ${options.ttlSecs}`);
    if (!Number.isInteger(options.maxKeys) || options.maxKeys < 1) {
      throw new RangeError(`maxKeys must be a positive integer, got ${options.maxKeys}`);
    }
    this.options = options;
    this.#env = env;
    this.#ttlMs = options.ttlSecs * 1000;
    this.#key = routingKeyReader(options.headers);
  }

  /** Keys currently remembered (expired ones may linger until the next pick sweeps them). */
  get size(): number {
    return this.#bindings.size;
  }

  select(candidates: readonly Worker[], ctx: RequestContext): Worker | undefined {
    if (candidates.length === 0) return undefined;
    const key = this.#key(ctx);
    if (key === undefined) return this.#pickNew(candidates);
    const now = this.#env.now();
    if (++this.#picks % SWEEP_EVERY === 0) this.#sweep(now);
    const digest = keyDigest(key);
    const binding = this.#bindings.get(digest);
    let worker: Worker | undefined;
    if (binding !== undefined) {
      this.#bindings.delete(digest);
      if (now - binding.lastUsed <= this.#ttlMs) worker = find(candidates, binding.workerId);
    }
    worker ??= this.#pickNew(candidates);
    if (worker === undefined) return undefined;
    if (binding === undefined) this.#bindings.set(digest, { workerId: worker.id, lastUsed: now });
    else {
      binding.workerId = worker.id;
      binding.lastUsed = now;
      this.#bindings.set(digest, binding);
    }
    if (this.#bindings.size > this.options.maxKeys) this.#evictOldest();
    return worker;
  }

  onRemove(workerId: string): void {
    // Removal is rare and a full scan keeps the hot path free of a per-worker key index.
    for (const [digest, binding] of this.#bindings) {
      if (binding.workerId === workerId) this.#bindings.delete(digest);
    }
  }

  #pickNew(candidates: readonly Worker[]): Worker | undefined {
    return this.options.subPolicy === 'random'
      ? candidates[Math.floor(this.#env.rng() * candidates.length)]
      : leastInFlight(candidates, this.#env);
  }

  #sweep(now: number): void {
    let budget = SWEEP_BUDGET;
    for (const [digest, binding] of this.#bindings) {
      if (budget-- === 0 || now - binding.lastUsed <= this.#ttlMs) return;
      this.#bindings.delete(digest);
    }
  }

  #evictOldest(): void {
    const oldest = this.#bindings.keys().next();
    if (!oldest.done) this.#bindings.delete(oldest.value);
  }
}

function find(candidates: readonly Worker[], id: string): Worker | undefined {
  for (let i = 0; i < candidates.length; i++) if ((candidates[i] as Worker).id === id) return candidates[i];
  return undefined;
}
