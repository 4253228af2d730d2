import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import { LeastLoadPolicy } from '../../src/policies/least-load.js';
import { tally, worker } from '../helpers.js';

const NOW = 100_000;
const env = (seed = 1) => ({ rng: seededRng(seed), now: () => NOW, staleAfterMs: 3000 });

interface Case {
  name: string;
  lambda?: number;
  workers: { inFlight?: number; kv?: number; age?: number }[];
  expect: number;
}

const cases: Case[] = [
  {
    name: 'no reports: lowest in-flight wins',
    workers: [{ inFlight: 3 }, { inFlight: 1 }, { inFlight: 2 }],
    expect: 1,
  },
  {
    name: 'lambda 2: idle worker at k=0.95 loses to 1 in flight at k=0',
    lambda: 2,
    workers: [
      { inFlight: 0, kv: 0.95 },
      { inFlight: 1, kv: 0 },
    ],
    expect: 1,
  },
  {
    name: 'moderate k does not outweigh a real in-flight gap',
    workers: [
      { inFlight: 0, kv: 0.5 },
      { inFlight: 2, kv: 0 },
    ],
    expect: 0, // 1.5 * 1 = 1.5 < 2
  },
  {
    name: 'lambda 0 ignores KV entirely',
    lambda: 0,
    workers: [
      { inFlight: 0, kv: 0.99 },
      { inFlight: 1, kv: 0 },
    ],
    expect: 0,
  },
  {
    name: 'NaN report counts as k = 0',
    workers: [
      { inFlight: 1, kv: NaN },
      { inFlight: 2, kv: 0 },
    ],
    expect: 0,
  },
  {
    name: 'Infinity report counts as k = 0',
    workers: [
      { inFlight: 1, kv: Infinity },
      { inFlight: 2, kv: 0 },
    ],
    expect: 0,
  },
  {
    name: 'negative report clamps to 0',
    workers: [
      { inFlight: 1, kv: -5 },
      { inFlight: 1, kv: 0.2 },
    ],
    expect: 0,
  },
  {
    name: 'above-1 report clamps to 0.999 (huge but finite barrier)',
    workers: [
      { inFlight: 0, kv: 1.7 },
      { inFlight: 100, kv: 0 },
    ],
    expect: 1, // 1.5 * 999 = 1498.5 > 100
  },
  {
    name: 'stale report (older than the stale window) counts as k = 0',
    workers: [
      { inFlight: 1, kv: 0.99, age: 3001 },
      { inFlight: 2, kv: 0 },
    ],
    expect: 0,
  },
  {
    name: 'report exactly at the stale limit still counts',
    workers: [
      { inFlight: 1, kv: 0.99, age: 3000 },
      { inFlight: 2, kv: 0 },
    ],
    expect: 1,
  },
];

for (const c of cases) {
  test(`least_load: ${c.name}`, () => {
    const policy = new LeastLoadPolicy({ lambda: c.lambda ?? 1.5 }, env());
    const ws = c.workers.map((w, i) =>
      worker(1000 + i, { inFlight: w.inFlight, kv: w.kv, at: NOW - (w.age ?? 0) }),
    );
    for (let trial = 0; trial < 20; trial++) {
      assert.equal(policy.select(ws)?.id, ws[c.expect]?.id);
    }
  });
}

test('least_load: score is in_flight + lambda * k / (1 - k)', () => {
  const policy = new LeastLoadPolicy({ lambda: 2 }, env());
  const w = worker(1, { inFlight: 3, kv: 0.75, at: NOW });
  assert.equal(policy.score(w), 3 + (2 * 0.75) / 0.25);
});

test('least_load: ties are broken at random among the best only', () => {
  const policy = new LeastLoadPolicy({ lambda: 1.5 }, env(7));
  const ws = [worker(1, { inFlight: 1 }), worker(2), worker(3), worker(4)];
  const counts = tally(3000, () => policy.select(ws)!);
  assert.equal(counts.get(ws[0]!.id), undefined, 'a worse worker is never picked');
  for (const w of ws.slice(1)) {
    const n = counts.get(w.id) ?? 0;
    assert.ok(n > 800 && n < 1200, `${w.id} got ${n} of 3000`);
  }
});

test('least_load: a new snapshot replaces the old one, so a dropped field is forgotten', () => {
  const policy = new LeastLoadPolicy({ lambda: 1.5 }, env());
  const a = worker(1, { kv: 0.95, at: NOW });
  const b = worker(2, { inFlight: 2 });
  assert.equal(policy.select([a, b])?.id, b.id);
  a.load = { at: NOW, running: 1 }; // next report carries no KV usage
  assert.equal(policy.select([a, b])?.id, a.id);
});
