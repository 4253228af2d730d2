/**
 * FNV-1a over the UTF-16 code units of `s[from, to)`, finished with murmur3's fmix32. FNV-1a alone
 * is fast but its bits avalanche poorly on short, similar inputs (`10.0.0.1:8000#17` vs `#18`); the
 * finalizer fixes that for a few multiplications. Deterministic across processes, so router
 * replicas agree on every key.
 */
export function hash32(s: string, from: number, to: number, seed = 0x811c9dc5): number {
  let h = seed | 0;
  for (let i = from; i < to; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
