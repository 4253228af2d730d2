import type { Worker } from '../core/worker.js';

/** Highest k we let into k / (1 - k): keeps the barrier finite (999x) for a worker reporting 100%. */
export const MAX_KV = 0.999;

/**
 * The worker's KV usage if its latest report is fresh and finite, else undefined. Out-of-range
 * values are clamped to [0, MAX_KV] rather than trusted.
 */
export function freshKvUsage(worker: Worker, now: number, staleAfterMs: number): number | undefined {
  const load = worker.load;
  if (load === undefined || now - load.at > staleAfterMs) return undefined;
  const k = load.kvUsage;
  if (k === undefined || !Number.isFinite(k)) return undefined;
  return k < 0 ? 0 : k > MAX_KV ? MAX_KV : k;
}
