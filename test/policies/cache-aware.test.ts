import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import type { Worker } from '../../src/core/worker.js';
import {
  CacheAwarePolicy,
  type CacheAwareOptions,
  type CacheAwareReason,
} from '../../src/policies/cache-aware.js';
import type { RequestContext } from '../../src/policies/policy.js';
import { PrefixScorer } from '../../src/policies/scorers/prefix.js';
import { worker } from '../helpers.js';

const NOW = 50_000;
const env = (seed = 1) => ({ rng: seededRng(seed), now: () => NOW, staleAfterMs: 3000 });
const DEFAULTS: CacheAwareOptions = {
  cacheThreshold: 0.3,
  balanceAbsThreshold: 64,
  balanceRelThreshold: 1.5,
  kvOverloadThreshold: 0.95,
  maxCharsPerWorker: 2_000_000,
};
const policyWith = (o: Partial<CacheAwareOptions> = {}, seed = 1) =>
  new CacheAwarePolicy({ ...DEFAULTS, ...o }, env(seed));

const SYS = 'You are a careful assistant. Answer briefly. '; // 45 chars
const CONV = `${SYS}user: what is a KV cache?`; // 71 chars

interface Case {
  name: string;
  options?: Partial<CacheAwareOptions>;
  /** Prompts each worker (by index) was already sent, with an optional model. */
  history: [worker: number, prompt: string, model?: string][];
  /** Per worker: in flight, and a KV usage (fresh unless `age` is given). */
  load: { inFlight?: number; kv?: number; age?: number }[];
  request: RequestContext;
  /** Only these worker indexes are candidates (default: all). */
  candidates?: number[];
  expect: number;
  reason: CacheAwareReason;
}

const cases: Case[] = [
  {
    name: 'follow-up turn goes to the worker holding the conversation',
    history: [[2, CONV]],
    load: [{ inFlight: 0 }, { inFlight: 0 }, { inFlight: 5 }, { inFlight: 0 }],
    request: { prompt: `${CONV} assistant: ... user: and why?` },
    expect: 2,
    reason: 'cache_hit',
  },
  {
    name: 'match at or below the threshold is a miss: least in flight',
    history: [[0, 'abc']],
    load: [{ inFlight: 0 }, { inFlight: 2 }, { inFlight: 1 }],
    request: { prompt: 'abcdefghij' }, // 3 / 10 = 0.3, not above
    expect: 0,
    reason: 'cache_miss',
  },
  {
    name: 'a miss prefers fewer in flight, then lower KV',
    history: [],
    load: [
      { inFlight: 3, kv: 0 },
      { inFlight: 1, kv: 0.6 },
      { inFlight: 1, kv: 0.2 },
    ],
    request: { prompt: 'fresh prompt' },
    expect: 2,
    reason: 'cache_miss',
  },
  {
    name: 'just above the threshold is a hit',
    history: [[1, 'abcd']],
    load: [{ inFlight: 0 }, { inFlight: 9 }],
    request: { prompt: 'abcdefghij' }, // 0.4
    expect: 1,
    reason: 'cache_hit',
  },
  {
    name: 'the longest match wins over a shorter one',
    history: [
      [0, SYS],
      [3, CONV],
    ],
    load: [{}, {}, {}, { inFlight: 4 }],
    request: { prompt: `${CONV} more` },
    expect: 3,
    reason: 'cache_hit',
  },
  {
    name: 'equal matches: fewer in flight',
    history: [
      [0, CONV],
      [1, CONV],
    ],
    load: [{ inFlight: 4 }, { inFlight: 2 }, { inFlight: 0 }],
    request: { prompt: CONV },
    expect: 1,
    reason: 'cache_hit',
  },
  {
    name: 'equal matches and in flight: lower fresh KV',
    history: [
      [0, CONV],
      [1, CONV],
    ],
    load: [
      { inFlight: 2, kv: 0.5 },
      { inFlight: 2, kv: 0.4 },
    ],
    request: { prompt: CONV },
    expect: 1,
    reason: 'cache_hit',
  },
  {
    name: 'imbalanced pool (100 vs 0 in flight) overrides a hit',
    history: [[0, CONV]],
    load: [{ inFlight: 100 }, { inFlight: 0 }, { inFlight: 30 }],
    request: { prompt: CONV },
    expect: 1,
    reason: 'imbalanced',
  },
  {
    name: 'a big absolute gap alone is not imbalance (300 = 1.5 x 200)',
    history: [[0, CONV]],
    load: [{ inFlight: 300 }, { inFlight: 200 }, { inFlight: 200 }],
    request: { prompt: CONV },
    expect: 0,
    reason: 'cache_hit',
  },
  {
    name: 'a big ratio alone is not imbalance (10 vs 1)',
    history: [[0, CONV]],
    load: [{ inFlight: 10 }, { inFlight: 1 }],
    request: { prompt: CONV },
    expect: 0,
    reason: 'cache_hit',
  },
  {
    name: 'custom balance thresholds',
    options: { balanceAbsThreshold: 4, balanceRelThreshold: 2 },
    history: [[0, CONV]],
    load: [{ inFlight: 10 }, { inFlight: 1 }],
    request: { prompt: CONV },
    expect: 1,
    reason: 'imbalanced',
  },
  {
    name: 'hit worker above the KV overload threshold: least loaded instead',
    history: [[0, CONV]],
    load: [{ kv: 0.97 }, { inFlight: 1, kv: 0.1 }, { inFlight: 2 }],
    request: { prompt: CONV },
    expect: 1,
    reason: 'kv_overload',
  },
  {
    name: 'KV exactly at the overload threshold still counts as a hit',
    history: [[0, CONV]],
    load: [{ kv: 0.95 }, {}],
    request: { prompt: CONV },
    expect: 0,
    reason: 'cache_hit',
  },
  {
    name: 'a stale KV report does not trigger the overload rule',
    history: [[0, CONV]],
    load: [{ kv: 0.99, age: 3001 }, {}],
    request: { prompt: CONV },
    expect: 0,
    reason: 'cache_hit',
  },
  {
    name: 'the best match is not a candidate: the next best candidate',
    history: [
      [0, CONV],
      [1, SYS],
    ],
    load: [{}, { inFlight: 3 }, {}],
    candidates: [1, 2],
    request: { prompt: CONV },
    expect: 1,
    reason: 'cache_hit',
  },
  {
    name: 'another model’s history does not count',
    history: [[0, CONV, 'llama']],
    load: [{ inFlight: 1 }, { inFlight: 0 }],
    request: { prompt: CONV, model: 'qwen' },
    expect: 1,
    reason: 'cache_miss',
  },
  {
    name: 'the same model’s history does',
    history: [[0, CONV, 'llama']],
    load: [{ inFlight: 1 }, { inFlight: 0 }],
    request: { prompt: CONV, model: 'llama' },
    expect: 0,
    reason: 'cache_hit',
  },
  {
    name: 'least loaded passes over KV-overloaded workers',
    history: [],
    load: [{ inFlight: 0, kv: 0.99 }, { inFlight: 2, kv: 0.5 }, { inFlight: 3 }],
    request: { prompt: CONV },
    expect: 1,
    reason: 'cache_miss',
  },
  {
    name: 'least loaded among all when every worker is KV-overloaded',
    history: [],
    load: [
      { inFlight: 1, kv: 0.99 },
      { inFlight: 0, kv: 0.98 },
    ],
    request: { prompt: CONV },
    expect: 1,
    reason: 'cache_miss',
  },
  {
    name: 'no prompt: least loaded',
    history: [[0, CONV]],
    load: [{ inFlight: 1 }, { inFlight: 0 }],
    request: { model: 'llama' },
    expect: 1,
    reason: 'no_prompt',
  },
  {
    name: 'cacheThreshold 0.9 turns a partial match into a miss',
    options: { cacheThreshold: 0.9 },
    history: [[0, SYS]],
    load: [{ inFlight: 1 }, { inFlight: 0 }],
    request: { prompt: CONV },
    expect: 1,
    reason: 'cache_miss',
  },
];

for (const c of cases) {
  test(`cache_aware: ${c.name}`, () => {
    const policy = policyWith(c.options);
    const ws = c.load.map((l, i) =>
      worker(i + 1, { inFlight: l.inFlight, kv: l.kv, at: NOW - (l.age ?? 0) }),
    );
    for (const [w, prompt, model] of c.history) policy.tree.insert(model ?? '', prompt, ws[w]!.id);
    const candidates = c.candidates ? c.candidates.map((i) => ws[i] as Worker) : ws;
    assert.equal(policy.select(candidates, c.request)?.id, ws[c.expect]?.id);
    assert.equal(policy.lastReason, c.reason);
  });
}

test('cache_aware: the chosen worker learns the prompt, so a conversation follows its first pick', () => {
  const policy = policyWith();
  const ws = [1, 2, 3, 4].map((p) => worker(p));
  ws.forEach((w, i) => (w.inFlight = [3, 0, 2, 1][i] as number));
  let prompt = `${SYS}user: hi`;
  const first = policy.select(ws, { prompt, model: 'm' });
  assert.equal(first, ws[1]);
  assert.equal(policy.prefixMatch(ws[1]!, { prompt, model: 'm' }), 1);
  assert.equal(policy.prefixMatch(ws[0]!, { prompt, model: 'm' }), 0);
  ws[1]!.inFlight = 10; // busier than everyone, but balanced by the thresholds
  for (let turn = 0; turn < 5; turn++) {
    prompt += ` assistant: answer ${turn} user: question ${turn}`;
    assert.equal(policy.select(ws, { prompt, model: 'm' }), ws[1]);
    assert.equal(policy.lastReason, 'cache_hit');
  }
  assert.equal(policy.prefixMatch(ws[1]!, { prompt }), 0, 'model "" is a different tree');
  assert.equal(policy.prefixMatch(ws[1]!, {}), 0);
});

test('cache_aware: distinct system prompts settle on distinct workers (model-separated trees)', () => {
  const policy = policyWith();
  const ws = [1, 2, 3].map((p) => worker(p));
  const homes = new Map<string, string>();
  for (const model of ['a', 'b']) {
    for (let s = 0; s < 3; s++) {
      const w = policy.select(ws, { prompt: `system ${s} of ${model}: ${'x'.repeat(100)} q0`, model })!;
      w.inFlight += 1; // held open, so the next new system prompt goes elsewhere
      homes.set(`${model}${s}`, w.id);
    }
    for (const w of ws) w.inFlight = 0;
  }
  assert.equal(new Set(['a0', 'a1', 'a2'].map((k) => homes.get(k))).size, 3);
  for (const [k, id] of homes) {
    const model = k[0] as string;
    const s = k[1] as string;
    const w = policy.select(ws, { prompt: `system ${s} of ${model}: ${'x'.repeat(100)} q1`, model });
    assert.equal(w?.id, id, k);
  }
  assert.equal(policy.tree.modelCount, 2);
});

test('cache_aware: removing a worker prunes its tree entries; its conversations re-home', () => {
  const policy = policyWith();
  const ws = [1, 2, 3].map((p) => worker(p));
  for (let i = 0; i < 30; i++) {
    ws.forEach((w, j) => (w.inFlight = j === i % 3 ? 0 : 1));
    policy.select(ws, { prompt: `conversation ${i}: ${'y'.repeat(50)}`, model: `m${i % 2}` });
  }
  const gone = ws[0]!;
  assert.ok(policy.tree.charsOf(gone.id) > 0);
  const nodes = policy.tree.nodeCount;
  policy.onRemove(gone.id);
  policy.tree.verify();
  assert.equal(policy.tree.charsOf(gone.id), 0);
  assert.equal(policy.tree.workerCount, 2);
  assert.ok(policy.tree.nodeCount < nodes);
  assert.equal(policy.prefixMatch(gone, { prompt: `conversation 0: ${'y'.repeat(50)}`, model: 'm0' }), 0);
  const rest = ws.slice(1);
  assert.equal(policy.select(rest, { prompt: `conversation 1: ${'y'.repeat(50)} more`, model: 'm1' }), ws[1]);
  assert.equal(policy.lastReason, 'cache_hit');
});

test('cache_aware: per-worker tree size stays within maxCharsPerWorker under load', () => {
  const policy = policyWith({ maxCharsPerWorker: 5000 });
  const ws = [1, 2, 3, 4].map((p) => worker(p));
  const rng = seededRng(9);
  for (let i = 0; i < 3000; i++) {
    const prompt = `sys ${Math.floor(rng() * 5)} ${'z'.repeat(200)} user ${Math.floor(rng() * 1e6)}`;
    const w = policy.select(ws, { prompt, model: i % 2 ? 'a' : 'b' })!;
    w.inFlight = Math.floor(rng() * 4);
    for (const x of ws) assert.ok(policy.tree.charsOf(x.id) <= 5000);
  }
  policy.tree.verify();
});

test('prefix scorer: matched fraction per candidate, learned through onPick, pruned on removal', () => {
  const scorer = new PrefixScorer({ maxCharsPerWorker: 10_000 });
  const ws = [1, 2, 3].map((p) => worker(p));
  const out = new Float64Array(3);
  scorer.score(ws, { prompt: 'abcdefghij' }, out);
  assert.deepEqual([...out], [0, 0, 0]);
  scorer.onPick(ws[0]!, { prompt: 'abcdefghij' });
  scorer.onPick(ws[1]!, { prompt: 'abcdeXXXXX' });
  scorer.onPick(ws[2]!, { prompt: 'abcdefghij', model: 'other' });
  scorer.score(ws, { prompt: 'abcdefghij' }, out);
  assert.deepEqual([...out], [1, 0.5, 0]);
  scorer.score(ws, {}, out);
  assert.deepEqual([...out], [0, 0, 0]);
  scorer.onRemove(ws[0]!.id);
  scorer.score(ws, { prompt: 'abcdefghij' }, out);
  assert.deepEqual([...out], [0, 0.5, 0]);
});
