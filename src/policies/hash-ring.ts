import { hash32 } from '../core/hash.js';
import type { Worker } from '../core/worker.js';

/** hash32 of `s[0, end)`: virtual nodes, routing keys and prompt prefixes all hash through here. */
export function hashString(s: string, end = s.length, seed = 0x811c9dc5): number {
  return hash32(s, 0, end, seed);
}

/**
 * A 52-bit digest of `s` from two independently seeded hashes: a safe integer Map key, so maps keyed
 * by client strings (session ids, bearer tokens) neither retain those strings nor collide in practice
 * (about 1e-6 chance of any collision among 100,000 keys).
 */
export function keyDigest(s: string): number {
  return hashString(s) * 0x100000 + (hashString(s, s.length, 0x9747b28c) >>> 12);
}

/** Ring positions are packed as hash * OWNER_SPAN + owner so one Float64Array sort orders them. */
const OWNER_SPAN = 0x100000;

/**
 * A consistent-hash ring: `virtualNodes` points per worker id at hashString(`${id}#${i}`). A key
 * belongs to the first point clockwise from its hash. Points depend only on the ids, so adding a
 * worker moves only the keys its new points take (about 1/N), and dropping one hands its keys to the
 * next worker clockwise on each of its arcs.
 */
export class HashRing {
  readonly ids: readonly string[];
  readonly #points: Uint32Array;
  readonly #owners: Uint32Array;
  readonly #seen: Uint32Array;
  #generation = 0;

  constructor(ids: readonly string[], virtualNodes: number) {
    if (ids.length >= OWNER_SPAN) throw new RangeError(`a hash ring holds at most ${OWNER_SPAN - 1} workers`);
    this.ids = ids;
    const packed = new Float64Array(ids.length * virtualNodes);
    let k = 0;
    for (let owner = 0; owner < ids.length; owner++) {
      const id = ids[owner] as string;
      for (let v = 0; v < virtualNodes; v++) packed[k++] = hashString(`${id}#${v}`) * OWNER_SPAN + owner;
    }
    packed.sort();
    this.#points = new Uint32Array(packed.length);
    this.#owners = new Uint32Array(packed.length);
    for (let i = 0; i < packed.length; i++) {
      const p = packed[i] as number;
      const owner = p % OWNER_SPAN;
      this.#owners[i] = owner;
      this.#points[i] = (p - owner) / OWNER_SPAN;
    }
    this.#seen = new Uint32Array(ids.length);
  }

  /** Index (into `ids`) of the owner of `hash`, or -1 for an empty ring. */
  owner(hash: number): number {
    const n = this.#points.length;
    return n === 0 ? -1 : (this.#owners[this.#firstAtOrAfter(hash)] as number);
  }

  /**
   * Visits distinct owners clockwise from `hash`, each once, until `accept` returns true; returns that
   * owner's index or -1 when none accepted. O(points) at worst, O(1) when the first owner accepts.
   */
  walk(hash: number, accept: (owner: number) => boolean): number {
    const n = this.#points.length;
    if (n === 0) return -1;
    const generation = ++this.#generation;
    if (generation === 0xffffffff) {
      this.#seen.fill(0);
      this.#generation = 1;
    }
    const gen = this.#generation;
    let distinct = 0;
    let p = this.#firstAtOrAfter(hash);
    for (let step = 0; step < n && distinct < this.ids.length; step++) {
      const o = this.#owners[p] as number;
      if (this.#seen[o] !== gen) {
        this.#seen[o] = gen;
        distinct += 1;
        if (accept(o)) return o;
      }
      p = p + 1 === n ? 0 : p + 1;
    }
    return -1;
  }

  #firstAtOrAfter(hash: number): number {
    const points = this.#points;
    let lo = 0;
    let hi = points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((points[mid] as number) < hash) lo = mid + 1;
      else hi = mid;
    }
    return lo === points.length ? 0 : lo;
  }
}

/**
 * The ring over the current candidates, rebuilt only when they change. WorkerPool.candidates() returns
 * the same array until membership or health changes, so the identity check is the fast path; an
 * equal list in a new array (tests, other callers) is recognised element-wise without a rebuild.
 * Unhealthy workers are simply absent from the candidates, so their keys fall to the next worker
 * clockwise and return when they are candidates again.
 */
export class CandidateRing {
  readonly #virtualNodes: number;
  #candidates: readonly Worker[] = [];
  #ring: HashRing = new HashRing([], 1);

  constructor(virtualNodes: number) {
    if (!Number.isInteger(virtualNodes) || virtualNodes < 1) {
      throw new RangeError(`virtualNodes must be a positive integer, got ${virtualNodes}`);
    }
    this.#virtualNodes = virtualNodes;
  }

  /** The ring for `candidates`; owner indexes it returns index into `candidates`. */
  ringFor(candidates: readonly Worker[]): HashRing {
    if (candidates !== this.#candidates && !sameWorkers(candidates, this.#candidates)) {
      this.#ring = new HashRing(
        candidates.map((w) => w.id),
        this.#virtualNodes,
      );
    }
    this.#candidates = candidates;
    return this.#ring;
  }
}

function sameWorkers(a: readonly Worker[], b: readonly Worker[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
