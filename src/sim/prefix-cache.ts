import { hash32 } from '../core/hash.js';
import { SimConfigError } from './errors.js';
import { CHARS_PER_TOKEN } from './tokens.js';

/**
 * Automatic prefix caching as vLLM (V1) does it, at block granularity, for one engine rank.
 *
 * A prompt is cut into fixed blocks of `blockTokens` tokens; block i's key hashes its text together
 * with block i-1's key, so a key names the whole prefix up to and including its block and a change
 * anywhere early changes every key after it. Full blocks only: a trailing partial block is never
 * cached. A block is either referenced by running requests (it is their KV, counted once however
 * many share it) or idle: computed, no longer referenced, kept in case a later prompt starts the
 * same way, and evicted least recently released first when memory is needed. Idle blocks live in
 * free KV, which is how vLLM's `kv_cache_usage_perc` and SGLang's `token_usage` count them too.
 */

export interface PrefixCacheOptions {
  /** Default true: vLLM V1 and SGLang both cache prefixes unless told not to. */
  enabled?: boolean;
  /** Most tokens held in cached blocks, referenced or idle; default (and at most useful) the KV capacity. */
  maxTokens?: number;
  /** Tokens per block, vLLM's block_size (default 16). */
  blockTokens?: number;
}

export const DEFAULT_BLOCK_TOKENS = 16;

/** One cached block. `refs` counts the running requests holding it; 0 means idle and evictable. */
export class CacheBlock {
  refs = 0;
  /** Idle list links (only while refs === 0). */
  prev: CacheBlock | undefined = undefined;
  next: CacheBlock | undefined = undefined;

  constructor(readonly key: number) {}
}

/** Resolved options with their defaults. */
export function resolvePrefixCacheOptions(
  o: PrefixCacheOptions | undefined,
  kvCapacityTokens: number,
): { enabled: boolean; maxTokens: number; blockTokens: number } {
  const enabled = o?.enabled ?? true;
  const blockTokens = o?.blockTokens ?? DEFAULT_BLOCK_TOKENS;
  const maxTokens = o?.maxTokens ?? kvCapacityTokens;
  if (!(Number.isInteger(blockTokens) && blockTokens >= 1)) {
    throw new SimConfigError(`prefixCache.blockTokens must be an integer >= 1, got ${blockTokens}`);
  }
  if (!(Number.isFinite(maxTokens) && maxTokens >= 0)) {
    throw new SimConfigError(`prefixCache.maxTokens must be >= 0, got ${maxTokens}`);
  }
  return { enabled, maxTokens, blockTokens };
}

const TWO_32 = 2 ** 32;
const TWO_21 = 2 ** 21;

/**
 * Chained keys of the full `blockChars`-character blocks of `text` (at most `maxBlocks`): two
 * independently seeded 32-bit hashes of the block, each seeded by half of the parent key, packed
 * into a 53-bit safe integer. Collisions among a million blocks are about a 1e-4 chance in all.
 */
export function blockKeys(
  text: string,
  maxBlocks = Infinity,
  blockChars = DEFAULT_BLOCK_TOKENS * CHARS_PER_TOKEN,
): number[] {
  const n = Math.min(Math.floor(text.length / blockChars), maxBlocks);
  const keys: number[] = new Array(Math.max(0, n));
  let parent = 0;
  for (let i = 0; i < n; i++) {
    const from = i * blockChars;
    const lo = parent % TWO_32;
    const hi = Math.floor(parent / TWO_32);
    const a = hash32(text, from, from + blockChars, (0x811c9dc5 ^ lo) >>> 0);
    const b = hash32(text, from, from + blockChars, (0x9747b28c ^ Math.imul(hi + 1, 0x2c1b3c6d)) >>> 0);
    parent = a * TWO_21 + (b >>> 11);
    keys[i] = parent;
  }
  return keys;
}

export class PrefixCache {
  readonly blockTokens: number;
  readonly maxTokens: number;
  readonly #blocks = new Map<number, CacheBlock>();
  /** Idle blocks, least recently released at the head (the next to evict). */
  #head: CacheBlock | undefined = undefined;
  #tail: CacheBlock | undefined = undefined;
  #idle = 0;
  /** Tokens evicted so far. */
  evictedTokens = 0;

  constructor(blockTokens: number, maxTokens: number) {
    this.blockTokens = blockTokens;
    this.maxTokens = maxTokens;
  }

  /** Tokens in cached blocks, referenced or idle. */
  get cachedTokens(): number {
    return this.#blocks.size * this.blockTokens;
  }

  /** Tokens in idle blocks: free KV that still holds a reusable prefix. */
  get idleTokens(): number {
    return this.#idle * this.blockTokens;
  }

  has(key: number): boolean {
    return this.#blocks.has(key);
  }

  /** How many leading keys (at most `limit`) are cached: the longest cached prefix, in blocks. */
  match(keys: readonly number[], limit = keys.length): number {
    const n = Math.min(limit, keys.length);
    let i = 0;
    while (i < n && this.#blocks.has(keys[i]!)) i++;
    return i;
  }

  /** Tokens among the first `n` keys (all cached) that are idle now, i.e. leave free KV when acquired. */
  idleTokensAmong(keys: readonly number[], n: number): number {
    let idle = 0;
    for (let i = 0; i < n; i++) if (this.#blocks.get(keys[i]!)!.refs === 0) idle++;
    return idle * this.blockTokens;
  }

  /** References the first `n` keys (all cached), appending their blocks to `into`. */
  acquire(keys: readonly number[], n: number, into: CacheBlock[]): void {
    for (let i = 0; i < n; i++) {
      const b = this.#blocks.get(keys[i]!)!;
      if (b.refs === 0) this.#unlinkIdle(b);
      b.refs++;
      into.push(b);
    }
  }

  /**
   * Drops one reference from each block; returns the tokens that became idle. Later blocks are
   * released first, so a prompt's tail is evicted before its head (vLLM frees in reverse for this).
   */
  release(blocks: readonly CacheBlock[]): number {
    let idled = 0;
    for (let i = blocks.length - 1; i >= 0; i--) {
      const b = blocks[i]!;
      if (--b.refs > 0) continue;
      // Evicted blocks are gone from the map; a referenced block never is.
      b.prev = this.#tail;
      b.next = undefined;
      if (this.#tail) this.#tail.next = b;
      else this.#head = b;
      this.#tail = b;
      this.#idle++;
      idled++;
    }
    return idled * this.blockTokens;
  }

  /**
   * Caches a block its caller just computed, referenced once by that caller. Returns undefined when
   * the key is cached already (the caller keeps its own copy as private KV, as a duplicate block
   * stays in vLLM) or the budget has no room even after evicting idle blocks.
   */
  insert(key: number): CacheBlock | undefined {
    if (this.#blocks.has(key)) return undefined;
    const over = this.cachedTokens + this.blockTokens - this.maxTokens;
    if (over > 0 && this.evict(over) < over) return undefined;
    const b = new CacheBlock(key);
    b.refs = 1;
    this.#blocks.set(key, b);
    return b;
  }

  /** Evicts idle blocks, least recently released first, until `tokens` are freed or none is left. */
  evict(tokens: number): number {
    let freed = 0;
    while (freed < tokens && this.#head !== undefined) {
      const b = this.#head;
      this.#unlinkIdle(b);
      this.#blocks.delete(b.key);
      freed += this.blockTokens;
    }
    this.evictedTokens += freed;
    return freed;
  }

  #unlinkIdle(b: CacheBlock): void {
    if (b.prev) b.prev.next = b.next;
    else this.#head = b.next;
    if (b.next) b.next.prev = b.prev;
    else this.#tail = b.prev;
    b.prev = undefined;
    b.next = undefined;
    this.#idle--;
  }
}
