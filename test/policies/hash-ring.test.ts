import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CandidateRing, HashRing, hashString, keyDigest } from '../../src/policies/hash-ring.js';
import { worker } from '../helpers.js';

const ids = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `10.0.0.${from + i}:8000`);
const keys = (n: number) => Array.from({ length: n }, (_, i) => `session-${i}`);
const ownerIds = (ring: HashRing, ks: readonly string[]) =>
  ks.map((k) => ring.ids[ring.owner(hashString(k))]);

test('hashString is pinned (replicas must agree) and hashes only s[0, end)', () => {
  const cases: [string, number | undefined, number][] = [
    ['', undefined, 2872998923],
    ['a', undefined, 444641715],
    ['10.0.0.1:8000#0', undefined, 3654145296],
    ['abcdef', 1, 444641715],
  ];
  for (const [s, end, expected] of cases) assert.equal(hashString(s, end), expected, JSON.stringify(s));
  assert.equal(hashString('abcdef', 3), hashString('abc'));
  assert.notEqual(hashString('abc', 3, 1), hashString('abc'));
});

test('keyDigest: safe integers, no collision among 100,000 similar keys', () => {
  const seen = new Set<number>();
  for (let i = 0; i < 100_000; i++) {
    const d = keyDigest(`Bearer sk-${i}`);
    assert.ok(Number.isSafeInteger(d) && d >= 0);
    seen.add(d);
  }
  assert.equal(seen.size, 100_000);
});

test('ring: an empty ring owns nothing', () => {
  const ring = new HashRing([], 150);
  assert.equal(ring.owner(123), -1);
  assert.equal(
    ring.walk(123, () => true),
    -1,
  );
});

for (const n of [2, 4, 16]) {
  test(`ring: ${n} workers x 150 points share 20,000 keys evenly (within 0.6x..1.5x of 1/N)`, () => {
    const ring = new HashRing(ids(n), 150);
    const counts = new Map<string, number>();
    for (const id of ownerIds(ring, keys(20_000)))
      counts.set(id as string, (counts.get(id as string) ?? 0) + 1);
    assert.equal(counts.size, n);
    const fair = 20_000 / n;
    for (const [id, c] of counts) assert.ok(c > 0.6 * fair && c < 1.5 * fair, `${id}: ${c} of ${fair}`);
  });
}

test('ring: placement depends only on the ids, not their order', () => {
  const a = new HashRing(ids(5), 150);
  const b = new HashRing([...ids(5)].reverse(), 150);
  assert.deepEqual(ownerIds(a, keys(5000)), ownerIds(b, keys(5000)));
});

test('ring: 4 -> 5 workers moves about 1/5 of 10,000 keys, all of them to the new worker', () => {
  const before = ownerIds(new HashRing(ids(4), 150), keys(10_000));
  const after = ownerIds(new HashRing(ids(5), 150), keys(10_000));
  let moved = 0;
  for (let i = 0; i < before.length; i++) {
    if (before[i] === after[i]) continue;
    moved += 1;
    assert.equal(after[i], ids(5)[4], `key ${i} moved between old workers`);
  }
  assert.ok(moved > 1200 && moved < 3000, `moved ${moved} of 10000`);
});

test('ring: dropping a worker hands each of its keys to the next worker clockwise, others stay', () => {
  const all = ids(5);
  const full = new HashRing(all, 150);
  const gone = 2;
  const rest = new HashRing(
    all.filter((_, i) => i !== gone),
    150,
  );
  for (const k of keys(5000)) {
    const h = hashString(k);
    const next = full.walk(h, (o) => o !== gone);
    assert.equal(rest.ids[rest.owner(h)], all[next]);
    if (full.owner(h) !== gone) assert.equal(all[full.owner(h)], all[next]);
  }
});

test('ring: walk visits every owner once, the key owner first, and stops on accept', () => {
  const ring = new HashRing(ids(6), 150);
  for (const k of keys(200)) {
    const h = hashString(k);
    const visited: number[] = [];
    assert.equal(
      ring.walk(h, (o) => (visited.push(o), false)),
      -1,
    );
    assert.equal(visited[0], ring.owner(h));
    assert.deepEqual([...visited].sort(), [0, 1, 2, 3, 4, 5]);
    const third = visited[2] as number;
    assert.equal(
      ring.walk(h, (o) => o === third),
      third,
    );
  }
});

test('candidate ring: rebuilt only when the candidate list changes', () => {
  const cache = new CandidateRing(150);
  const ws = [1, 2, 3].map((p) => worker(p));
  const r1 = cache.ringFor(ws);
  assert.equal(cache.ringFor(ws), r1, 'same array');
  assert.equal(cache.ringFor([...ws]), r1, 'same workers, new array');
  const r2 = cache.ringFor(ws.slice(0, 2));
  assert.notEqual(r2, r1);
  assert.deepEqual(r2.ids, [ws[0]?.id, ws[1]?.id]);
  assert.notEqual(cache.ringFor([ws[0]!, ws[1]!, worker(3)]), r2, 'a new Worker object with an old id');
  assert.throws(() => new CandidateRing(0), RangeError);
});
