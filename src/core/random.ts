/** A source of uniform numbers in [0, 1); seeded in tests and benchmarks, Math.random otherwise. */
export type Rng = () => number;

/** mulberry32: tiny, fast and good enough for load spreading; not for anything secret. */
export function seededRng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
