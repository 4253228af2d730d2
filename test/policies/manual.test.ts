import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import type { Worker } from '../../src/core/worker.js';
import { ManualPolicy, type ManualOptions } from '../../src/policies/manual.js';
import type { RequestContext } from '../../src/policies/policy.js';
import { DEFAULT_ROUTING_KEY_HEADERS } from '../../src/policies/routing-key.js';
import { tally, worker } from '../helpers.js';

const HOUR = 3_600_000;

function setup(o: Partial<ManualOptions> = {}, ports = [1, 2, 3, 4]) {
  const clock = { now: 1_000_000 };
  const policy = new ManualPolicy(
    {
      headers: DEFAULT_ROUTING_KEY_HEADERS,
      subPolicy: 'least_in_flight',
      ttlSecs: 14_400,
      maxKeys: 100_000,
      ...o,
    },
    { rng: seededRng(5), now: () => clock.now, staleAfterMs: 3000 },
  );
  return { policy, clock, ws: ports.map((p) => worker(p)) };
}
const key = (k: string): RequestContext => ({ headers: { 'x-session-id': k } });
/** Makes `ws[i]` the unique least-in-flight worker. */
const favour = (ws: Worker[], i: number) => ws.forEach((w, j) => (w.inFlight = j === i ? 0 : 10));

test('manual: least_in_flight binds a new key to the least loaded worker, then sticks', () => {
  const { policy, ws } = setup();
  favour(ws, 2);
  const first = policy.select(ws, key('a'));
  assert.equal(first, ws[2]);
  favour(ws, 0);
  for (let i = 0; i < 10; i++) assert.equal(policy.select(ws, key('a')), ws[2]);
  assert.equal(policy.select(ws, key('b')), ws[0], 'a new key uses the sub-policy');
  assert.equal(policy.size, 2);
});

test('manual: random sub-policy spreads new keys, each key stays put', () => {
  const { policy, ws } = setup({ subPolicy: 'random' });
  favour(ws, 0); // ignored by random
  let n = 0;
  const counts = tally(4000, () => policy.select(ws, key(`k${n++}`))!);
  for (const w of ws) assert.ok((counts.get(w.id) ?? 0) > 800, `${w.id}: ${counts.get(w.id)}`);
  const bound = policy.select(ws, key('fixed'));
  for (let i = 0; i < 50; i++) assert.equal(policy.select(ws, key('fixed')), bound);
});

test('manual: no key uses the sub-policy and remembers nothing', () => {
  const { policy, ws } = setup();
  for (let i = 0; i < 4; i++) {
    favour(ws, i);
    assert.equal(policy.select(ws, {}), ws[i]);
  }
  assert.equal(policy.size, 0);
  assert.equal(policy.select([], key('a')), undefined);
});

test('manual: a key leaves a worker that is no longer a candidate and does not move back', () => {
  const { policy, ws } = setup();
  favour(ws, 1);
  assert.equal(policy.select(ws, key('a')), ws[1]);
  favour(ws, 3);
  const without = ws.filter((w) => w !== ws[1]);
  assert.equal(policy.select(without, key('a')), ws[3]);
  assert.equal(policy.select(ws, key('a')), ws[3], 'stays on its new worker after the old one recovers');
});

const ttlCases: { name: string; gapsMs: number[]; sticks: boolean }[] = [
  { name: 'used again just inside the TTL', gapsMs: [4 * HOUR], sticks: true },
  { name: 'idle past the TTL', gapsMs: [4 * HOUR + 1], sticks: false },
  { name: 'each use refreshes the TTL', gapsMs: [3 * HOUR, 3 * HOUR, 3 * HOUR], sticks: true },
  { name: 'refreshed, then idle too long', gapsMs: [3 * HOUR, 5 * HOUR], sticks: false },
];

for (const c of ttlCases) {
  test(`manual TTL (4 h): ${c.name}`, () => {
    const { policy, ws, clock } = setup();
    favour(ws, 0);
    assert.equal(policy.select(ws, key('a')), ws[0]);
    favour(ws, 1); // a re-pick would choose ws[1]
    let last: Worker | undefined;
    for (const gap of c.gapsMs) {
      clock.now += gap;
      last = policy.select(ws, key('a'));
    }
    assert.equal(last, c.sticks ? ws[0] : ws[1]);
  });
}

test('manual: expired keys are swept from memory by later picks', () => {
  const { policy, ws, clock } = setup({ ttlSecs: 60 });
  for (let i = 0; i < 50; i++) policy.select(ws, key(`old${i}`));
  assert.equal(policy.size, 50);
  clock.now += 61_000;
  policy.select(ws, key('new'));
  assert.equal(policy.size, 51, 'swept a few at a time, not on every pick');
  for (let i = 0; i < 64; i++) policy.select(ws, key('new'));
  assert.equal(policy.size, 1);
});

test('manual: beyond maxKeys the least recently used key is forgotten', () => {
  const { policy, ws } = setup({ maxKeys: 3 });
  favour(ws, 0);
  for (const k of ['a', 'b', 'c']) policy.select(ws, key(k));
  policy.select(ws, key('a')); // b is now the least recently used
  favour(ws, 1);
  policy.select(ws, key('d'));
  assert.equal(policy.size, 3);
  assert.equal(policy.select(ws, key('b')), ws[1], 'b was evicted and re-bound');
  // Re-binding b evicted c (the oldest now); a and d kept their workers.
  assert.equal(policy.select(ws, key('a')), ws[0]);
  assert.equal(policy.select(ws, key('d')), ws[1]);
  favour(ws, 2);
  assert.equal(policy.select(ws, key('c')), ws[2]);
});

test('manual: removing a worker drops exactly its keys', () => {
  const { policy, ws } = setup();
  for (let i = 0; i < 40; i++) {
    favour(ws, i % 4);
    policy.select(ws, key(`k${i}`));
  }
  policy.onRemove(ws[0]!.id);
  assert.equal(policy.size, 30);
  favour(ws, 3);
  assert.equal(policy.select(ws, key('k1')), ws[1], 'other workers keep their keys');
});

test('manual: constructor rejects a non-positive TTL or key bound', () => {
  assert.throws(() => setup({ ttlSecs: 0 }), RangeError);
  assert.throws(() => setup({ maxKeys: 0 }), RangeError);
  assert.throws(() => setup({ maxKeys: 1.5 }), RangeError);
});
