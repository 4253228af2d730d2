import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import type { Worker } from '../../src/core/worker.js';
import { WorkerPool } from '../../src/core/worker-pool.js';
import {
  ConsistentHashingPolicy,
  type ConsistentHashingOptions,
} from '../../src/policies/consistent-hashing.js';
import type { RequestContext } from '../../src/policies/policy.js';
import { DEFAULT_ROUTING_KEY_HEADERS, routingKeyReader } from '../../src/policies/routing-key.js';
import { tally, worker } from '../helpers.js';

const env = (seed = 1) => ({ rng: seededRng(seed), now: () => 0, staleAfterMs: 3000 });
const options = (o: Partial<ConsistentHashingOptions> = {}): ConsistentHashingOptions => ({
  headers: DEFAULT_ROUTING_KEY_HEADERS,
  virtualNodes: 150,
  ...o,
});
const byKey = (k: string): RequestContext => ({ headers: { 'x-session-id': k } });

const keyCases: { name: string; headers?: string[]; ctx: RequestContext; expect: string | undefined }[] = [
  {
    name: 'ctx.routingKey wins over headers',
    ctx: { routingKey: 'rk', headers: { 'x-session-id': 's', authorization: 'a' } },
    expect: 'rk',
  },
  {
    name: 'x-session-id before x-routing-key',
    ctx: { headers: { 'x-session-id': 's', 'x-routing-key': 'r' } },
    expect: 's',
  },
  {
    name: 'x-routing-key alone',
    ctx: { headers: { 'x-routing-key': 'r', authorization: 'a' } },
    expect: 'r',
  },
  {
    name: 'authorization as the last resort',
    ctx: { headers: { authorization: 'Bearer t' } },
    expect: 'Bearer t',
  },
  {
    name: 'empty values are skipped',
    ctx: { routingKey: '', headers: { 'x-session-id': '', authorization: 'a' } },
    expect: 'a',
  },
  { name: 'no key at all', ctx: { headers: { 'content-type': 'application/json' } }, expect: undefined },
  { name: 'no headers at all', ctx: {}, expect: undefined },
  {
    name: 'custom header list (mixed case is lower-cased)',
    headers: ['X-User'],
    ctx: { headers: { 'x-user': 'u', 'x-session-id': 's' } },
    expect: 'u',
  },
  {
    name: 'custom list still falls back to authorization',
    headers: ['x-user'],
    ctx: { headers: { 'x-session-id': 's', authorization: 'a' } },
    expect: 'a',
  },
];

for (const c of keyCases) {
  test(`routing key: ${c.name}`, () => {
    assert.equal(routingKeyReader(c.headers ?? DEFAULT_ROUTING_KEY_HEADERS)(c.ctx), c.expect);
  });
}

test('consistent_hashing: a key always lands on the same worker, whatever carries it', () => {
  const policy = new ConsistentHashingPolicy(options(), env());
  const ws = [1, 2, 3, 4].map((p) => worker(p));
  for (let i = 0; i < 200; i++) {
    const first = policy.select(ws, byKey(`s${i}`));
    for (const ctx of [
      byKey(`s${i}`),
      { routingKey: `s${i}` },
      { headers: { 'x-routing-key': `s${i}` } },
      { headers: { authorization: `s${i}` } },
    ]) {
      ws[i % 4]!.inFlight += 5; // load does not matter to this policy
      assert.equal(policy.select(ws, ctx), first);
    }
  }
});

test('consistent_hashing: no key spreads at random; no candidates gives undefined', () => {
  const policy = new ConsistentHashingPolicy(options(), env(3));
  const ws = [1, 2, 3, 4].map((p) => worker(p));
  const counts = tally(4000, () => policy.select(ws, {})!);
  for (const w of ws) assert.ok((counts.get(w.id) ?? 0) > 800, `${w.id}: ${counts.get(w.id)}`);
  assert.equal(policy.select([], byKey('x')), undefined);
});

test('consistent_hashing: 4 -> 5 workers moves roughly 20% of 10,000 keys, only to the new one', () => {
  const policy = new ConsistentHashingPolicy(options(), env());
  const pool = new WorkerPool();
  for (let p = 1; p <= 4; p++) pool.add(`http://10.0.0.${p}:8000`);
  const route = () =>
    Array.from({ length: 10_000 }, (_, i) => policy.select(pool.candidates(), byKey(`k${i}`))!.id);
  const before = route();
  const added = pool.add('http://10.0.0.5:8000');
  const after = route();
  let moved = 0;
  for (let i = 0; i < before.length; i++) {
    if (before[i] === after[i]) continue;
    moved += 1;
    assert.equal(after[i], added.id);
  }
  assert.ok(moved > 1200 && moved < 3000, `moved ${moved}`);
});

test('consistent_hashing: an unhealthy worker’s keys move to others and come back on recovery', () => {
  const policy = new ConsistentHashingPolicy(options(), env());
  const pool = new WorkerPool();
  const ws: Worker[] = [];
  for (let p = 1; p <= 5; p++) ws.push(pool.add(`http://10.0.0.${p}:8000`));
  const route = () =>
    Array.from({ length: 5000 }, (_, i) => policy.select(pool.candidates(), byKey(`k${i}`))!.id);
  const healthy = route();
  const sick = ws[1] as Worker;
  sick.setHealthy(false);
  const degraded = route();
  const receivers = new Set<string>();
  for (let i = 0; i < healthy.length; i++) {
    if (healthy[i] === sick.id) {
      assert.notEqual(degraded[i], sick.id);
      receivers.add(degraded[i] as string);
    } else assert.equal(degraded[i], healthy[i], 'a key of a healthy worker moved');
  }
  assert.ok(receivers.size >= 3, `its keys spread over ${receivers.size} workers`);
  sick.setHealthy(true);
  assert.deepEqual(route(), healthy);
});
