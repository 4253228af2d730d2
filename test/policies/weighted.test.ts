import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import { minMaxLowerIsBetter } from '../../src/policies/scorers/scorer.js';
import { GIE_PRESET, WeightedPolicy, type WeightedScorerConfig } from '../../src/policies/weighted.js';
import { tally, worker } from '../helpers.js';

const NOW = 10_000;
const env = (seed = 1) => ({ rng: seededRng(seed), now: () => NOW, staleAfterMs: 3000 });
const fresh = (l: Record<string, number>, inFlight = 0) => ({ at: NOW, load: l, inFlight });

test('min-max normalization: lower is better, equal values all score 1', () => {
  const out = new Float64Array(3);
  minMaxLowerIsBetter(Float64Array.from([2, 4, 6]), 3, out);
  assert.deepEqual([...out], [1, 0.5, 0]);
  minMaxLowerIsBetter(Float64Array.from([5, 5, 5]), 3, out);
  assert.deepEqual([...out], [1, 1, 1]);
});

interface Case {
  name: string;
  scorers: readonly WeightedScorerConfig[];
  workers: Parameters<typeof worker>[1][];
  expect: number;
}

const cases: Case[] = [
  {
    name: 'GIE preset: shorter queue wins at equal KV',
    scorers: GIE_PRESET,
    workers: [fresh({ waiting: 8, kvUsage: 0.3 }), fresh({ waiting: 1, kvUsage: 0.3 })],
    expect: 1,
  },
  {
    name: 'GIE preset: lower KV wins at equal queue',
    scorers: GIE_PRESET,
    workers: [fresh({ waiting: 2, kvUsage: 0.9 }), fresh({ waiting: 2, kvUsage: 0.1 })],
    expect: 1,
  },
  {
    name: 'weights trade signals: queue x3 outweighs a KV gap',
    scorers: [
      { name: 'queue', weight: 3 },
      { name: 'kv', weight: 1 },
    ],
    workers: [fresh({ waiting: 0, kvUsage: 0.8 }), fresh({ waiting: 10, kvUsage: 0.1 })],
    expect: 0, // 3*1 + 0.2 = 3.2 vs 3*0 + 0.9
  },
  {
    name: 'in_flight scorer sees the router’s own picks',
    scorers: [{ name: 'in_flight', weight: 1 }],
    workers: [fresh({}, 4), fresh({}, 1), fresh({}, 2)],
    expect: 1,
  },
  {
    name: 'missing signals count as empty queue and empty cache (GIE behaviour)',
    scorers: GIE_PRESET,
    workers: [{ inFlight: 0 }, fresh({ waiting: 3, kvUsage: 0.5 })],
    expect: 0,
  },
];

for (const c of cases) {
  test(`weighted: ${c.name}`, () => {
    const policy = new WeightedPolicy(c.scorers, env());
    const ws = c.workers.map((w, i) => worker(3000 + i, w));
    for (let i = 0; i < 10; i++) assert.equal(policy.select(ws, {})?.id, ws[c.expect]?.id);
  });
}

test('weighted: ties are broken at random among the best', () => {
  const policy = new WeightedPolicy(GIE_PRESET, env(3));
  const ws = [
    worker(1, fresh({ waiting: 1, kvUsage: 0.2 })),
    worker(2, fresh({ waiting: 1, kvUsage: 0.2 })),
    worker(3, fresh({ waiting: 9, kvUsage: 0.9 })),
  ];
  const counts = tally(2000, () => policy.select(ws, {})!);
  assert.equal(counts.get(ws[2]!.id), undefined);
  assert.ok((counts.get(ws[0]!.id) ?? 0) > 850 && (counts.get(ws[1]!.id) ?? 0) > 850);
});

test('weighted: scratch space grows with the fleet', () => {
  const policy = new WeightedPolicy([{ name: 'in_flight', weight: 1 }], env());
  const ws = Array.from({ length: 100 }, (_, i) => worker(i + 1, { inFlight: 100 - i }));
  assert.equal(policy.select(ws, {})?.port, 100);
});

test('weighted: the prefix scorer learns from picks and steers repeated prompts; it makes the policy read bodies', () => {
  const policy = new WeightedPolicy(GIE_PRESET, env(4));
  assert.equal(policy.needsBody, true);
  assert.equal(
    new WeightedPolicy(
      GIE_PRESET.filter((s) => s.name !== 'prefix'),
      env(),
    ).needsBody,
    false,
  );
  const ws = [worker(1, fresh({ waiting: 0, kvUsage: 0.1 })), worker(2, fresh({ waiting: 0, kvUsage: 0.1 }))];
  const prompt = 'You are a helpful assistant. '.repeat(40);
  const first = policy.select(ws, { prompt, model: 'm' })!;
  for (let i = 0; i < 20; i++)
    assert.equal(policy.select(ws, { prompt: `${prompt} turn ${i}`, model: 'm' }), first);
  policy.onRemove(first.id);
  const counts = tally(400, () =>
    policy.select(ws, { prompt: `${Math.random().toString(36).slice(2)} unrelated`, model: 'x' })!,
  );
  assert.equal(counts.size, 2, 'unrelated prompts still spread');
});
