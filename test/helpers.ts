import { Worker } from '../src/core/worker.js';
import type { LoadSnapshot } from '../src/core/load-snapshot.js';

/** A worker with the given in-flight count and (optionally) a KV report taken at `at`. */
export function worker(
  port: number,
  opts: { inFlight?: number; kv?: number; at?: number; load?: Partial<LoadSnapshot> } = {},
): Worker {
  const w = new Worker(`http://10.0.0.1:${port}`);
  w.inFlight = opts.inFlight ?? 0;
  if (opts.kv !== undefined || opts.load) {
    w.load = { at: opts.at ?? 0, ...(opts.kv !== undefined ? { kvUsage: opts.kv } : {}), ...opts.load };
  }
  return w;
}

/** Counts how often each worker id is returned by `pickOnce` over `n` calls. */
export function tally(n: number, pickOnce: () => { id: string }): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const id = pickOnce().id;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}
