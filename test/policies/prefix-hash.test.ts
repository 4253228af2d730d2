import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import { HashRing, hashString } from '../../src/policies/hash-ring.js';
import { PrefixHashPolicy, type PrefixHashOptions } from '../../src/policies/prefix-hash.js';
import { tally, worker } from '../helpers.js';

const env = (seed = 1) => ({ rng: seededRng(seed), now: () => 0, staleAfterMs: 3000 });
const policyWith = (o: Partial<PrefixHashOptions> = {}) =>
  new PrefixHashPolicy({ prefixChars: 256, loadFactor: 1.25, virtualNodes: 150, ...o }, env());
const fleet = (n = 4) => Array.from({ length: n }, (_, i) => worker(i + 1));
const SYSTEM = 'You are a helpful assistant. '.repeat(10); // 290 chars, longer than the 256 hashed

test('prefix_hash: prompts sharing the first N chars share a worker; the rest is ignored', () => {
  const policy = policyWith();
  const ws = fleet();
  const target = policy.select(ws, { prompt: `${SYSTEM} question 1` });
  for (let i = 0; i < 50; i++) assert.equal(policy.select(ws, { prompt: `${SYSTEM} question ${i}` }), target);
  const short = policyWith({ prefixChars: 10 });
  const t2 = short.select(ws, { prompt: '0123456789 tail a' });
  assert.equal(short.select(ws, { prompt: '0123456789 tail b' }), t2);
  assert.equal(short.select(ws, { prompt: '0123456789' }), t2);
});

test('prefix_hash: different prefixes spread over the fleet', () => {
  const policy = policyWith();
  const ws = fleet();
  let i = 0;
  const counts = tally(4000, () => policy.select(ws, { prompt: `user ${i++}: hello` })!);
  for (const w of ws) assert.ok((counts.get(w.id) ?? 0) > 600, `${w.id}: ${counts.get(w.id)}`);
});

test('prefix_hash: no prompt goes to the least in-flight worker; no candidates to nobody', () => {
  const policy = policyWith();
  const ws = fleet();
  ws.forEach((w, i) => (w.inFlight = [5, 3, 1, 4][i] as number));
  assert.equal(policy.select(ws, {}), ws[2]);
  assert.equal(policy.select(ws, { prompt: '' }), ws[2]);
  assert.equal(policy.select([], { prompt: 'x' }), undefined);
});

// Acceptable: inFlight + 1 <= ceil(loadFactor * (T + 1) / n); 4 workers, T = total in flight.
const boundCases: { name: string; owner: number; others: number; loadFactor?: number; stays: boolean }[] = [
  { name: 'idle fleet: capacity ceil(1.25/4) = 1, owner accepts', owner: 0, others: 0, stays: true },
  { name: 'owner 1, others 0: capacity ceil(1.25*2/4) = 1 < 2', owner: 1, others: 0, stays: false },
  { name: 'all at 2: capacity ceil(1.25*9/4) = 3, owner fits', owner: 2, others: 2, stays: true },
  { name: 'owner 3, others 2: capacity ceil(1.25*10/4) = 4, fits exactly', owner: 3, others: 2, stays: true },
  { name: 'owner 4, others 2: capacity ceil(1.25*11/4) = 4 < 5', owner: 4, others: 2, stays: false },
  {
    name: 'loadFactor 2 tolerates owner 4, others 2: capacity 6',
    owner: 4,
    others: 2,
    loadFactor: 2,
    stays: true,
  },
  {
    name: 'loadFactor 1 at 20 vs 19: capacity ceil(78/4) = 20 < 21',
    owner: 20,
    others: 19,
    loadFactor: 1,
    stays: false,
  },
];

for (const c of boundCases) {
  test(`prefix_hash bounded load: ${c.name}`, () => {
    const policy = policyWith({ loadFactor: c.loadFactor ?? 1.25 });
    const ws = fleet();
    const prompt = `${SYSTEM} bounded`;
    const owner = policy.select(ws, { prompt }) as (typeof ws)[number];
    for (const w of ws) w.inFlight = w === owner ? c.owner : c.others;
    const ring = new HashRing(
      ws.map((w) => w.id),
      150,
    );
    const ownerIndex = ws.indexOf(owner);
    const next = ws[ring.walk(hashString(prompt, 256), (o) => o !== ownerIndex)];
    assert.equal(policy.select(ws, { prompt }), c.stays ? owner : next);
  });
}

test('prefix_hash bounded load: walks past several overloaded workers in ring order', () => {
  const policy = policyWith();
  const ws = fleet(6);
  const prompt = `${SYSTEM} walk`;
  const ring = new HashRing(
    ws.map((w) => w.id),
    150,
  );
  const order: number[] = [];
  ring.walk(hashString(prompt, 256), (o) => (order.push(o), false));
  // The first three in ring order are busy: 3 * 6 = 18 in flight, capacity ceil(1.25*19/6) = 4.
  for (const [rank, o] of order.entries()) ws[o]!.inFlight = rank < 3 ? 6 : 0;
  assert.equal(policy.select(ws, { prompt }), ws[order[3] as number]);
});

test('prefix_hash: loadFactor < 1 can reject everyone, then the least in-flight wins', () => {
  const policy = policyWith({ loadFactor: 0.5 });
  const ws = fleet();
  ws.forEach((w, i) => (w.inFlight = [3, 3, 2, 3][i] as number)); // capacity ceil(0.5*12/4) = 2
  for (let i = 0; i < 20; i++) assert.equal(policy.select(ws, { prompt: `p${i}` }), ws[2]);
});

test('prefix_hash: constructor rejects bad options', () => {
  assert.throws(() => policyWith({ prefixChars: 0 }), RangeError);
  assert.throws(() => policyWith({ loadFactor: 0 }), RangeError);
  assert.throws(() => policyWith({ virtualNodes: 0 }), RangeError);
});
