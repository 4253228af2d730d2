import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import { ExpectedWaitPolicy, type ExpectedWaitOptions } from '../../src/policies/expected-wait.js';
import { worker } from '../helpers.js';

const NOW = 100_000;
const OPTIONS: ExpectedWaitOptions = {
  lambdaT: 0.15,
  fallbackThroughput: 2000,
  meanPromptTokens: 1024,
  bodyAware: false,
};
const make = (options: Partial<ExpectedWaitOptions> = {}) =>
  new ExpectedWaitPolicy(
    { ...OPTIONS, ...options },
    { rng: seededRng(1), now: () => NOW, staleAfterMs: 3000 },
  );

interface Case {
  name: string;
  workers: Parameters<typeof worker>[1][];
  ctx?: { promptTokens?: number };
  expect: number;
}

const load = (l: Record<string, number>, age = 0) => ({ at: NOW - age, load: l });

const cases: Case[] = [
  {
    name: 'fewer queued tokens wins at equal throughput',
    workers: [
      load({ waitingTokens: 9000, throughput: 3000 }),
      load({ waitingTokens: 1000, throughput: 3000 }),
    ],
    expect: 1,
  },
  {
    name: 'a faster worker with a longer queue can wait less',
    workers: [
      load({ waitingTokens: 4000, throughput: 1000 }),
      load({ waitingTokens: 8000, throughput: 8000 }),
    ],
    expect: 1, // (4000+1024)/1000 = 5.0 s vs (8000+1024)/8000 = 1.1 s
  },
  {
    name: 'queue estimated from waiting requests when tokens are not reported',
    workers: [load({ waiting: 10, throughput: 2000 }), load({ waiting: 1, throughput: 2000 })],
    expect: 1,
  },
  {
    name: 'KV barrier decides between equal queues',
    workers: [
      load({ waitingTokens: 0, throughput: 2000, kvUsage: 0.98 }),
      load({ waitingTokens: 0, throughput: 2000, kvUsage: 0.2 }),
    ],
    expect: 1,
  },
  {
    name: 'unreported throughput uses the fallback, not zero (no division blow-up)',
    workers: [load({ waitingTokens: 2000, throughput: 0 }), load({ waitingTokens: 3000, throughput: 2000 })],
    expect: 0,
  },
  {
    name: 'no report: seed signal in seconds (in-flight times mean prompt over fallback throughput)',
    workers: [{ inFlight: 3 }, { inFlight: 1 }],
    expect: 1,
  },
  {
    name: 'stale report is ignored and falls back per worker',
    workers: [
      { inFlight: 0, ...load({ waitingTokens: 50_000, throughput: 1000 }, 5000) },
      load({ waitingTokens: 4000, throughput: 2000 }),
    ],
    expect: 0,
  },
  {
    name: 'NaN queue and throughput fields do not poison the score',
    workers: [
      load({ waitingTokens: NaN, throughput: NaN, kvUsage: NaN }),
      load({ waitingTokens: 5000, throughput: 2000 }),
    ],
    expect: 0,
  },
];

for (const c of cases) {
  test(`expected_wait: ${c.name}`, () => {
    const policy = make();
    const ws = c.workers.map((w, i) => worker(2000 + i, w));
    assert.equal(policy.select(ws, c.ctx ?? {})?.id, ws[c.expect]?.id);
  });
}

test('expected_wait: work sent since the last report spreads a burst, and resets on the next report', () => {
  const policy = make();
  const a = worker(1, load({ waitingTokens: 0, throughput: 2000 }));
  const b = worker(2, load({ waitingTokens: 1000, throughput: 2000 }));
  const backlog = (w: typeof a) => policy.score(w, { promptTokens: 1 }) * 2000 - 1; // queued + sent
  assert.equal(policy.select([a, b], { promptTokens: 1000 }), a, 'a starts 1000 tokens ahead');
  for (let i = 0; i < 9; i++) policy.select([a, b], { promptTokens: 1000 });
  assert.equal(backlog(a) + backlog(b), 1000 + 10 * 1000, 'every pick is accounted for');
  assert.ok(Math.abs(backlog(a) - backlog(b)) <= 1000, `a ${backlog(a)} b ${backlog(b)}`);
  // A newer report on a already includes what was sent; the local estimate starts over.
  a.load = { at: NOW + 1, waitingTokens: 0, throughput: 2000 };
  assert.equal(backlog(a), 0);
});

test('expected_wait: score is (queued + sent + own) / throughput + lambdaT * k / (1 - k)', () => {
  const policy = make();
  const w = worker(1, load({ waitingTokens: 3000, throughput: 2000, kvUsage: 0.5 }));
  assert.equal(policy.score(w, { promptTokens: 1000 }), (3000 + 1000) / 2000 + 0.15);
  assert.equal(policy.score(w, {}), (3000 + 1024) / 2000 + 0.15, 'unknown prompt size uses the mean');
});

test('expected_wait: removal drops the sent-work state', () => {
  const policy = make();
  const a = worker(1, load({ waitingTokens: 0, throughput: 1000 }));
  policy.select([a], { promptTokens: 5000 });
  assert.equal(policy.score(a, { promptTokens: 1000 }), 6);
  policy.onRemove(a.id);
  assert.equal(policy.score(a, { promptTokens: 1000 }), 1);
});

test('expected_wait: only reads the body when configured to', () => {
  assert.equal(make().needsBody, false);
  assert.equal(make({ bodyAware: true }).needsBody, true);
});

test('expected_wait: with a reported capacity, KV usage is projected by the tokens sent since the report', () => {
  const policy = make();
  const small = worker(1, load({ waitingTokens: 0, throughput: 2000, kvUsage: 0.5, capacityTokens: 10_000 }));
  const large = worker(
    2,
    load({ waitingTokens: 0, throughput: 2000, kvUsage: 0.5, capacityTokens: 100_000 }),
  );
  // Same report, but 4000 tokens fill 40% of the small cache and 4% of the large one.
  assert.ok(policy.score(small, { promptTokens: 4000 }) > policy.score(large, { promptTokens: 4000 }));
  const a = worker(3, load({ waitingTokens: 0, throughput: 2000, kvUsage: 0.6, capacityTokens: 10_000 }));
  const b = worker(4, load({ waitingTokens: 0, throughput: 2000, kvUsage: 0.6, capacityTokens: 10_000 }));
  const before = policy.score(a, { promptTokens: 1 });
  policy.select([a], { promptTokens: 2000 });
  assert.ok(
    policy.score(a, { promptTokens: 1 }) > before + 0.15,
    'sent work raises the barrier before the next poll',
  );
  assert.equal(policy.select([a, b], { promptTokens: 500 }), b);
});

test('expected_wait: a zero throughput report (idle interval) keeps the smoothed speed, not the fallback', () => {
  const policy = make();
  const slow = worker(1, load({ waitingTokens: 1000, throughput: 500 }));
  const base = policy.score(slow, { promptTokens: 1000 });
  assert.equal(base, (1000 + 1000) / 500);
  slow.load = { at: NOW + 1, waitingTokens: 1000, throughput: 0 };
  assert.equal(policy.score(slow, { promptTokens: 1000 }), base, 'still judged at 500 tok/s');
  slow.load = { at: NOW + 2, waitingTokens: 1000, throughput: 1500 };
  assert.equal(policy.score(slow, { promptTokens: 1000 }), 2000 / (500 + 0.3 * 1000));
});
