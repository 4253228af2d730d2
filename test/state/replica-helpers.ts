import { once } from 'node:events';
import http, { type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import type { ConfigInput } from '../../src/config/schema.js';
import { seededRng } from '../../src/core/random.js';
import { createRouter, type Router, type RouterOptions } from '../../src/router.js';

/** A real HTTP worker that answers health polls and holds every other request until released. */
export interface HeldWorker {
  readonly url: string;
  readonly id: string;
  /** Requests it holds open now. */
  readonly held: number;
  /** Resolves when the worker has received `n` requests in total. */
  received(n: number): Promise<void>;
  /** Answers every held request. */
  releaseAll(): void;
}

export async function startHeldWorkers(t: TestContext, n: number): Promise<HeldWorker[]> {
  const workers: HeldWorker[] = [];
  for (let i = 0; i < n; i++) {
    const open = new Set<ServerResponse>();
    let total = 0;
    const waiters: { n: number; resolve: () => void }[] = [];
    const server = http.createServer((req, res) => {
      if (req.url === '/health') {
        res.end('ok');
        return;
      }
      req.resume();
      open.add(res);
      res.on('close', () => open.delete(res));
      total += 1;
      for (const w of waiters.filter((x) => total >= x.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    t.after(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    );
    workers.push({
      url: `http://127.0.0.1:${port}`,
      id: `127.0.0.1:${port}`,
      get held() {
        return open.size;
      },
      received: (k) =>
        total >= k ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n: k, resolve })),
      releaseAll() {
        for (const res of open) res.end('done');
      },
    });
  }
  return workers;
}

export interface ReplicaOptions {
  /** Redis URL, or undefined for replicas that share nothing (the control). */
  redisUrl: string | undefined;
  workers: readonly { url: string }[];
  heartbeatTtlSecs?: number;
  /** Keeps the tests sharing one Redis apart. */
  keyPrefix?: string;
  /** Every replica gets the same seed by default: without shared state they herd alike. */
  seed?: (i: number) => number;
  extra?: ConfigInput;
  options?: (i: number) => RouterOptions;
}

/** `n` started routers over the same workers (engine none), stopped after the test. */
export async function startReplicas(t: TestContext, n: number, o: ReplicaOptions): Promise<Router[]> {
  const routers: Router[] = [];
  for (let i = 0; i < n; i++) {
    const router = createRouter(
      {
        workers: o.workers.map((w) => ({ url: w.url, engine: 'none' as const })),
        policy: 'least_load',
        host: '127.0.0.1',
        ...(o.redisUrl
          ? {
              state: {
                redis: {
                  url: o.redisUrl,
                  heartbeatTtlSecs: o.heartbeatTtlSecs ?? 1,
                  keyPrefix: o.keyPrefix ?? 'llr:',
                },
              },
            }
          : {}),
        ...o.extra,
      },
      { rng: seededRng(o.seed?.(i) ?? 7), ...o.options?.(i) },
    );
    t.after(() => router.stop());
    await router.start();
    routers.push(router);
  }
  return routers;
}

/** Every replica's changes written, then every replica's view re-read: as if they were one router. */
export async function sync(routers: readonly Router[]): Promise<void> {
  await Promise.all(routers.map((r) => r.sharedState?.flush()));
  await Promise.all(routers.map((r) => r.sharedState?.refresh()));
}

/** Leases per worker over the whole fleet (the sum of every replica's own counts), by worker index. */
export function fleetCounts(routers: readonly Router[]): number[] {
  const ids = routers[0]!.pool.list().map((w) => w.id);
  return ids.map((id) => routers.reduce((sum, r) => sum + (r.pool.get(id)?.ownInFlight ?? 0), 0));
}

/** What one replica believes each worker carries (own + remote), by worker index. */
export const view = (router: Router): number[] => router.pool.list().map((w) => w.inFlight);

export const spread = (counts: readonly number[]): number => Math.max(...counts) - Math.min(...counts);

/** Polls `cond` (awaiting `step` between tries) until true, or fails naming `what`. */
export async function eventually(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  step: () => Promise<unknown> = () => new Promise((r) => setTimeout(r, 25)),
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await step();
  }
}
