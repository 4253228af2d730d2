import type { ReadContext } from '../../src/poller/engine.js';
import { fetchLimited } from '../../src/poller/fetch-limited.js';

/** A real ReadContext against `base` (a test server), with a clock the test controls. */
export function context(base: string, now: () => number = Date.now): ReadContext {
  return { get: (path) => fetchLimited(base + path, { timeoutMs: 5000, maxBytes: 4 << 20 }), now };
}

/** Rounds every number so float sums compare exactly. */
export function rounded<T>(value: T): T {
  return JSON.parse(
    JSON.stringify(value, (_k, v: unknown) => (typeof v === 'number' ? Math.round(v * 1e9) / 1e9 : v)),
  ) as T;
}
