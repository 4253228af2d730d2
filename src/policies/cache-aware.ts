import type { Worker } from '../core/worker.js';
import { freshKvUsage } from './kv-usage.js';
import { leastInFlight } from './least-in-flight.js';
import type { Policy, PolicyEnv, RequestContext } from './policy.js';
import { RadixTree } from './radix-tree.js';

export interface CacheAwareOptions {
  /** Route by cache only when matched chars / prompt chars exceeds this, 0..1 (default 0.3). */
  cacheThreshold: number;
  /** Imbalance needs max - min in-flight above this (default 64)... */
  balanceAbsThreshold: number;
  /** ...and max above this times min (default 1.5). */
  balanceRelThreshold: number;
  /** A cache hit on a worker whose fresh KV usage is above this, 0..1, goes least-loaded (default 0.95). */
  kvOverloadThreshold: number;
  /** Prompt characters remembered per worker over all models, LRU-evicted (default 2,000,000). */
  maxCharsPerWorker: number;
}

/** Why the last pick went where it did: for tests, logs and future metrics. */
export type CacheAwareReason = 'cache_hit' | 'cache_miss' | 'imbalanced' | 'kv_overload' | 'no_prompt';

/**
 * cache_aware, after SGLang's router: an approximate radix tree per model (ctx.model, '' when unset)
 * remembers which worker was sent which prompts. In order:
 *
 * 1. No prompt: least loaded, nothing remembered.
 * 2. Imbalanced pool, max - min in-flight > balanceAbsThreshold and max > balanceRelThreshold * min:
 *    least loaded, since chasing cache hits would pile more onto the hot worker.
 * 3. Longest prefix match among the candidates (ties: fewer in flight, lower fresh KV, random). If
 *    matched / prompt length > cacheThreshold, that worker, unless its fresh KV usage is above
 *    kvOverloadThreshold (its cache is about to evict or preempt anyway): then least loaded.
 * 4. Otherwise least loaded.
 *
 * "Least loaded" is fewest in flight, then lower fresh KV usage, then random, among the workers not
 * above kvOverloadThreshold (all of them if every one is). Every routed prompt is inserted for the
 * chosen worker, so requests sharing a prefix follow each other.
 */
export class CacheAwarePolicy implements Policy {
  readonly name = 'cache_aware';
  readonly needsBody = true;
  readonly options: CacheAwareOptions;
  readonly tree: RadixTree;
  lastReason: CacheAwareReason | undefined;
  readonly #env: PolicyEnv;
  #matched = new Float64Array(16);

  constructor(options: CacheAwareOptions, env: PolicyEnv) {
    this.options = options;
    this.tree = new RadixTree({ maxCharsPerWorker: options.maxCharsPerWorker });
    this.#env = env;
  }

  select(candidates: readonly Worker[], ctx: RequestContext): Worker | undefined {
    if (candidates.length === 0) return undefined;
    const prompt = ctx.prompt;
    if (!prompt) {
      this.lastReason = 'no_prompt';
      return this.#leastLoaded(candidates);
    }
    const model = ctx.model ?? '';
    const worker = this.#choose(candidates, model, prompt);
    if (worker !== undefined) this.tree.insert(model, prompt, worker.id);
    return worker;
  }

  /** Fraction (0..1) of the request's prompt that `worker` was already sent under its model. */
  prefixMatch(worker: Worker, ctx: RequestContext): number {
    const prompt = ctx.prompt;
    if (!prompt) return 0;
    return this.tree.matchedChars(ctx.model ?? '', prompt, worker.id) / prompt.length;
  }

  onRemove(workerId: string): void {
    this.tree.removeWorker(workerId);
  }

  #choose(candidates: readonly Worker[], model: string, prompt: string): Worker | undefined {
    if (this.#imbalanced(candidates)) {
      this.lastReason = 'imbalanced';
      return this.#leastLoaded(candidates);
    }
    const n = candidates.length;
    if (this.#matched.length < n) this.#matched = new Float64Array(n * 2);
    const matched = this.#matched;
    const best = this.tree.matchCandidates(model, prompt, candidates, matched);
    if (best / prompt.length <= this.options.cacheThreshold) {
      this.lastReason = 'cache_miss';
      return this.#leastLoaded(candidates);
    }
    const now = this.#env.now();
    const staleAfterMs = this.#env.staleAfterMs;
    let hit: Worker | undefined;
    let hitLoad = Infinity;
    let hitKv = Infinity;
    let ties = 0;
    for (let i = 0; i < n; i++) {
      if (matched[i] !== best) continue;
      const w = candidates[i] as Worker;
      const kv = freshKvUsage(w, now, staleAfterMs) ?? 0;
      if (w.inFlight < hitLoad || (w.inFlight === hitLoad && kv < hitKv)) {
        hit = w;
        hitLoad = w.inFlight;
        hitKv = kv;
        ties = 1;
      } else if (w.inFlight === hitLoad && kv === hitKv) {
        ties += 1;
        if (this.#env.rng() * ties < 1) hit = w;
      }
    }
    if (hitKv > this.options.kvOverloadThreshold) {
      this.lastReason = 'kv_overload';
      return this.#leastLoaded(candidates);
    }
    this.lastReason = 'cache_hit';
    return hit;
  }

  #leastLoaded(candidates: readonly Worker[]): Worker | undefined {
    return leastInFlight(candidates, this.#env, true, this.options.kvOverloadThreshold);
  }

  #imbalanced(candidates: readonly Worker[]): boolean {
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < candidates.length; i++) {
      const load = (candidates[i] as Worker).inFlight;
      if (load < min) min = load;
      if (load > max) max = load;
    }
    return max - min > this.options.balanceAbsThreshold && max > this.options.balanceRelThreshold * min;
  }
}
