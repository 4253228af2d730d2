import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import { PowerOfTwoPolicy } from '../../src/policies/power-of-two.js';
import { RandomPolicy } from '../../src/policies/random.js';
import { RoundRobinPolicy } from '../../src/policies/round-robin.js';
import { tally, worker } from '../helpers.js';

const NOW = 50_000;
const env = (seed: number) => ({ rng: seededRng(seed), now: () => NOW, staleAfterMs: 3000 });

test('random spreads picks evenly (seeded, generous bounds)', () => {
  const policy = new RandomPolicy(env(42));
  const ws = [1, 2, 3, 4].map((p) => worker(p));
  const counts = tally(8000, () => policy.select(ws)!);
  for (const w of ws) {
    const n = counts.get(w.id) ?? 0;
    assert.ok(n > 1700 && n < 2300, `${w.id}: ${n}`);
  }
});

test('round_robin cycles in order and survives a shrinking candidate list', () => {
  const policy = new RoundRobinPolicy();
  const ws = [1, 2, 3].map((p) => worker(p));
  const seq = Array.from({ length: 6 }, () => policy.select(ws)!.port);
  assert.deepEqual(seq, [1, 2, 3, 1, 2, 3]);
  const two = ws.slice(0, 2);
  const next = Array.from({ length: 4 }, () => policy.select(two)!.port);
  assert.equal(new Set(next).size, 2);
  assert.equal(policy.select([]), undefined);
});

test('power_of_two: compares KV when both reports are fresh', () => {
  const policy = new PowerOfTwoPolicy(env(1));
  const a = worker(1, { inFlight: 0, kv: 0.9, at: NOW });
  const b = worker(2, { inFlight: 5, kv: 0.1, at: NOW });
  for (let i = 0; i < 20; i++) assert.equal(policy.select([a, b])?.id, b.id);
});

test('power_of_two: falls back to in-flight for both when one report is missing or stale', () => {
  const policy = new PowerOfTwoPolicy(env(1));
  const missing = [worker(1, { inFlight: 0 }), worker(2, { inFlight: 5, kv: 0.1, at: NOW })];
  const stale = [
    worker(1, { inFlight: 0, kv: 0.9, at: NOW - 5000 }),
    worker(2, { inFlight: 5, kv: 0.1, at: NOW }),
  ];
  const nan = [worker(1, { inFlight: 0, kv: NaN, at: NOW }), worker(2, { inFlight: 5, kv: 0.1, at: NOW })];
  for (const pair of [missing, stale, nan]) {
    for (let i = 0; i < 20; i++) assert.equal(policy.select(pair)?.port, 1);
  }
});

test('power_of_two: samples two distinct workers and spreads load', () => {
  const policy = new PowerOfTwoPolicy(env(9));
  const ws = [1, 2, 3, 4, 5, 6, 7, 8].map((p) => worker(p));
  // With no completions, a fleet where every pick adds in-flight must stay nearly level.
  for (let i = 0; i < 8000; i++) policy.select(ws)!.inFlight += 1;
  const loads = ws.map((w) => w.inFlight);
  assert.ok(Math.max(...loads) - Math.min(...loads) <= 3, `spread ${loads.join(',')}`);
  // The worse of a pair is never picked: the single heaviest worker loses every comparison.
  const heavy = worker(99, { inFlight: 1000 });
  const counts = tally(2000, () => policy.select([heavy, worker(1), worker(2)])!);
  assert.equal(counts.get(heavy.id), undefined);
});
