import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { seededRng } from '../../src/core/random.js';
import { RadixTree } from '../../src/policies/radix-tree.js';
import { worker } from '../helpers.js';

const tree = (maxCharsPerWorker = 1_000_000) => new RadixTree({ maxCharsPerWorker });

interface MatchCase {
  name: string;
  inserts: [worker: string, text: string, model?: string][];
  queries: [text: string, expect: Record<string, number>, model?: string][];
}

const matchCases: MatchCase[] = [
  {
    name: 'longest prefix per worker, including a partial edge',
    inserts: [
      ['w1', 'hello world'],
      ['w2', 'hello there'],
    ],
    queries: [
      ['hello world!', { w1: 11, w2: 6 }],
      ['hello wo', { w1: 8, w2: 6 }],
      ['help', { w1: 3, w2: 3 }],
      ['xyz', { w1: 0, w2: 0 }],
      ['', { w1: 0, w2: 0 }],
    ],
  },
  {
    name: 'a shorter insert splits an edge and keeps the longer owner',
    inserts: [
      ['w1', 'abcdefgh'],
      ['w2', 'abcd'],
    ],
    queries: [
      ['abcdefgh', { w1: 8, w2: 4 }],
      ['abcdX', { w1: 4, w2: 4 }],
      ['abc', { w1: 3, w2: 3 }],
    ],
  },
  {
    name: 'the same worker on branching prompts',
    inserts: [
      ['w1', 'system: A; user: one'],
      ['w1', 'system: A; user: two'],
      ['w2', 'system: B; user: one'],
    ],
    queries: [
      ['system: A; user: two more', { w1: 20, w2: 8 }],
      ['system: B; user: one', { w1: 8, w2: 20 }],
    ],
  },
  {
    name: 'models are separate trees',
    inserts: [
      ['w1', 'shared prompt', 'llama'],
      ['w2', 'shared prompt', 'qwen'],
    ],
    queries: [
      ['shared prompt', { w1: 13, w2: 0 }, 'llama'],
      ['shared prompt', { w1: 0, w2: 13 }, 'qwen'],
      ['shared prompt', { w1: 0, w2: 0 }, ''],
    ],
  },
  {
    name: 'UTF-16 code units, surrogate pairs included',
    inserts: [['w1', 'héllo 😀 a']],
    queries: [['héllo 😀 b', { w1: 9 }]],
  },
];

for (const c of matchCases) {
  test(`radix tree: ${c.name}`, () => {
    const t = tree();
    for (const [w, text, model] of c.inserts) t.insert(model ?? '', text, w);
    t.verify();
    for (const [text, expect, model] of c.queries) {
      for (const [w, n] of Object.entries(expect)) {
        assert.equal(t.matchedChars(model ?? '', text, w), n, `${w} on ${JSON.stringify(text)}`);
      }
    }
  });
}

test('radix tree: matchCandidates fills each candidate’s match and returns the best', () => {
  const t = tree();
  const [a, b, c] = [worker(1), worker(2), worker(3)];
  t.insert('m', 'the quick brown fox', a.id);
  t.insert('m', 'the quick red fox', b.id);
  const out = new Float64Array(3).fill(99);
  assert.equal(t.matchCandidates('m', 'the quick brown dog', [a, b, c], out), 16);
  assert.deepEqual([...out], [16, 10, 0]);
  assert.equal(t.matchCandidates('m', 'the quick brown dog', [b, c], out), 10, 'only candidates count');
  assert.deepEqual([...out.subarray(0, 2)], [10, 0]);
  assert.equal(t.matchCandidates('other', 'the quick', [a, b], out), 0);
  assert.deepEqual([...out.subarray(0, 2)], [0, 0]);
});

test('radix tree: LRU eviction drops the least recently sent prompt first', () => {
  const t = tree(30);
  for (const ch of ['a', 'b', 'c']) t.insert('', ch.repeat(10), 'w');
  t.insert('', 'a'.repeat(10), 'w'); // refresh a
  t.insert('', 'd'.repeat(10), 'w');
  t.verify();
  assert.equal(t.charsOf('w'), 30);
  const seen = ['a', 'b', 'c', 'd'].map((ch) => t.matchedChars('', ch.repeat(10), 'w'));
  assert.deepEqual(seen, [10, 0, 10, 10]);
});

test('radix tree: eviction takes leaves first, so a shared head outlives its branches', () => {
  const t = tree(20);
  t.insert('', 'head-aaaaa', 'w'); // 10 chars
  t.insert('', 'head-bbbbb', 'w'); // + 5 after the split
  t.insert('', 'zzzzzzzzz', 'w'); // + 9 = 24 > 20: the oldest leaf (aaaaa) goes
  t.verify();
  assert.equal(t.charsOf('w'), 19);
  assert.equal(t.matchedChars('', 'head-aaaaa', 'w'), 5);
  assert.equal(t.matchedChars('', 'head-bbbbb', 'w'), 10);
});

test('radix tree: one worker’s eviction never touches another worker’s entries', () => {
  const t = tree(100);
  const shared = 'common system prompt: ';
  t.insert('', `${shared}w2 conversation`, 'w2');
  for (let i = 0; i < 200; i++) t.insert('', `${shared}flood ${i} ${'x'.repeat(i % 50)}`, 'w1');
  t.verify();
  assert.ok(t.charsOf('w1') <= 100);
  assert.equal(t.matchedChars('', `${shared}w2 conversation`, 'w2'), shared.length + 15);
});

test('radix tree: a prompt longer than the budget is remembered up to the budget', () => {
  const t = tree(50);
  t.insert('', 'p'.repeat(10) + 'q'.repeat(100), 'w');
  t.verify();
  assert.equal(t.charsOf('w'), 50);
  assert.equal(t.matchedChars('', 'p'.repeat(10) + 'q'.repeat(100), 'w'), 50);
});

test('radix tree: per-worker size never exceeds the budget over 20,000 random inserts', () => {
  const budget = 2000;
  const t = tree(budget);
  const rng = seededRng(11);
  const heads = Array.from({ length: 8 }, (_, i) => `system prompt ${i}: ${'s'.repeat(20 + i * 7)}`);
  const ids = ['w0', 'w1', 'w2', 'w3', 'w4'];
  const models = ['', 'a', 'b'];
  for (let i = 0; i < 20_000; i++) {
    const head = heads[Math.floor(rng() * heads.length)] as string;
    const tail = Array.from({ length: 1 + Math.floor(rng() * 6) }, () => Math.floor(rng() * 10)).join('');
    const w = ids[Math.floor(rng() * ids.length)] as string;
    t.insert(models[i % 3] as string, rng() < 0.5 ? head + tail : tail + head, w);
    for (const id of ids) assert.ok(t.charsOf(id) <= budget, `${id}: ${t.charsOf(id)} after ${i}`);
    if (i % 1000 === 0) t.verify();
  }
  t.verify();
  let chars = 0;
  for (const id of ids) chars += t.charsOf(id);
  assert.ok(t.nodeCount <= chars, 'every node holds at least one charged char');
});

test('radix tree: removing a worker prunes all its entries, in every model, and only those', () => {
  const t = tree();
  t.insert('a', 'only w1 saw this', 'w1');
  t.insert('b', 'shared start, w1 end', 'w1');
  t.insert('b', 'shared start, w2 end', 'w2');
  const nodes = t.nodeCount;
  t.removeWorker('w1');
  t.verify();
  assert.equal(t.charsOf('w1'), 0);
  assert.equal(t.workerCount, 1);
  assert.equal(t.modelCount, 1, 'model a had only w1 and is gone');
  assert.ok(t.nodeCount < nodes);
  assert.equal(t.matchedChars('b', 'shared start, w1 end', 'w1'), 0);
  assert.equal(t.matchedChars('b', 'shared start, w2 end', 'w2'), 20);
  t.removeWorker('w2');
  t.removeWorker('never-seen');
  t.verify();
  assert.equal(t.nodeCount, 0);
  assert.equal(t.modelCount, 0);
});

test('radix tree: the budget spans models', () => {
  const t = tree(40);
  t.insert('a', 'a'.repeat(30), 'w');
  t.insert('b', 'b'.repeat(30), 'w');
  t.verify();
  assert.equal(t.charsOf('w'), 30);
  assert.equal(t.modelCount, 1, 'the older model tree was emptied and dropped');
  assert.equal(t.matchedChars('b', 'b'.repeat(30), 'w'), 30);
});

test('radix tree: rejects a non-positive or fractional budget', () => {
  for (const bad of [0, -1, 1.5, NaN]) assert.throws(() => tree(bad), RangeError);
});

test('radix tree: short edges cut from long prompts do not keep the prompts alive', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const head = 'h'.repeat(20_000);
  gc();
  const before = process.memoryUsage().heapUsed;
  const t = tree(100_000);
  // Each prompt is a fresh 20 KB string whose unique part is a 30-char leaf edge.
  for (let i = 0; i < 2000; i++)
    t.insert('', JSON.parse(JSON.stringify(`${head}${1e6 + i} unique tail x`)), 'w');
  gc();
  const grown = process.memoryUsage().heapUsed - before;
  assert.ok(t.charsOf('w') > 20_000 + 2000 * 13, 'the leaves are long enough for V8 to slice');
  // Pinning the prompts would hold 2000 * 20 KB = 40 MB.
  assert.ok(grown < 8_000_000, `heap grew ${(grown / 1e6).toFixed(1)} MB`);
});
