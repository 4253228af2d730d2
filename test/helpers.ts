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

/** A port that was free a moment ago, for servers (Prometheus, a CLI child) that need a fixed address. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** Polls `fn` until it returns a value (errors count as "not yet"), or fails after `timeoutMs`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
