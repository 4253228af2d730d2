import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createWorkload } from '../../src/sim/workload.js';
import { estimateCapacity } from '../../src/sim/capacity.js';
import { EngineModel, type FinishReason } from '../../src/sim/engine-model.js';
import { resolveEngineParams } from '../../src/sim/engine-params.js';
import { ENGINE_CLASSES, slowed } from '../../src/sim/scenarios.js';
import { runVirtual } from '../../src/sim/virtual-run.js';
import { drain } from './sim-helpers.js';

const FAST = {
  kvCapacityTokens: 10_000,
  prefillTokensPerSec: 10_000,
  decodeStepBaseMs: 10,
  decodePerSeqMs: 1,
  maxBatchSize: 16,
  maxBatchTokens: 2048,
  admitWatermark: 0,
};

test('KV accounting stays within capacity under load and returns to 0 when idle', () => {
  const model = new EngineModel(ENGINE_CLASSES.a100);
  const cap = model.params.kvCapacityTokens;
  const work = createWorkload({ seed: 11, ratePerSec: 3, durationSec: 120 });
  let maxSeen = 0;
  let busySteps = 0;
  const { records, counters } = runVirtual(
    model,
    work.map((w) => ({ at: w.at, promptTokens: w.promptTokens, maxTokens: w.maxTokens })),
    {
      onStep: () => {
        const s = model.state();
        assert.ok(s.kvTokens <= cap, `kv ${s.kvTokens} > capacity ${cap}`);
        assert.ok(s.kvTokens >= 0 && s.waitingTokens >= 0);
        if (s.kvTokens > 0) busySteps++;
        maxSeen = Math.max(maxSeen, s.kvTokens);
      },
    },
  );
  assert.ok(busySteps > 100 && maxSeen > cap / 2, 'the run actually loaded the cache');
  assert.deepEqual(model.state(), {
    kvTokens: 0,
    kvCapacityTokens: cap,
    kvUsage: 0,
    running: 0,
    waiting: 0,
    waitingTokens: 0,
    prefillBacklogTokens: 0,
  });
  assert.equal(counters.served, work.length);
  assert.equal(counters.peakKvTokens, maxSeen);
  const expected = work.reduce((a, w) => a + w.maxTokens, 0);
  assert.equal(counters.generatedTokens, expected, 'every token generated once, none twice');
  assert.ok(records.every((r) => r.ttftMs !== undefined && r.e2eMs! >= r.ttftMs));
});

test('a full KV cache preempts the youngest request, which recomputes and still completes', () => {
  const model = new EngineModel({ ...FAST, kvCapacityTokens: 1000 });
  const tokens: number[][] = [[], [], []];
  const finished: FinishReason[] = [];
  const handles = [0, 1, 2].map((i) =>
    model.submit(
      { promptTokens: 300, maxTokens: 200 },
      { onToken: (n) => tokens[i]!.push(n), onFinish: (r) => finished.push(r) },
      i, // arrival order: request 2 is the youngest
    ),
  );
  let peak = 0;
  drain(model, 3, () => (peak = Math.max(peak, model.state().kvTokens)));
  assert.ok(model.counters.preemptions >= 1, 'three requests growing to 500 tokens cannot share 1000');
  assert.equal(handles[0]!.preemptions, 0, 'the oldest is never the victim while younger ones run');
  assert.ok(handles[2]!.preemptions >= 1, 'the youngest is preempted first');
  assert.ok(model.counters.recomputedTokens >= 300);
  assert.ok(peak <= 1000);
  assert.deepEqual(finished, ['length', 'length', 'length']);
  for (const t of tokens)
    assert.deepEqual(
      t,
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
  assert.equal(model.state().kvTokens, 0);
});

test('prefill time is proportional to prompt tokens, chunked by the step token budget', () => {
  const m1 = new EngineModel(FAST);
  const a = m1.submit({ promptTokens: 1000, maxTokens: 1 }, {}, 0);
  drain(m1);
  // one step: 10 ms base + 1000 tokens at 10k tok/s
  assert.equal(a.firstTokenMs, 110);

  const m2 = new EngineModel(FAST);
  const b = m2.submit({ promptTokens: 5000, maxTokens: 1 }, {}, 0);
  drain(m2);
  // chunks of 2048, 2048, 904: three step bases plus 500 ms of prefill
  assert.ok(Math.abs(b.firstTokenMs! - 530) < 1e-9, `got ${b.firstTokenMs}`);
});

test('a decode step slows as the batch grows, and a long prefill stalls running decodes', () => {
  const stepTime = (batch: number) => {
    const m = new EngineModel(FAST);
    for (let i = 0; i < batch; i++) m.submit({ promptTokens: 10, maxTokens: 50 }, {}, 0);
    const d0 = m.beginStep(0)!; // the prefill step
    m.endStep(d0);
    return m.beginStep(d0)!; // a pure decode step
  };
  assert.equal(stepTime(1), 11);
  assert.equal(stepTime(8), 18);

  const m = new EngineModel(FAST);
  m.submit({ promptTokens: 10, maxTokens: 50 }, {}, 0);
  m.endStep(m.beginStep(0)!);
  m.submit({ promptTokens: 2000, maxTokens: 5 }, {}, 11);
  // decode of the first (1 token) and 2000 prefill tokens share one step
  assert.equal(m.beginStep(11), 10 + 1 + 200);
});

test('FCFS: a head that does not fit blocks smaller requests behind it', () => {
  const m = new EngineModel({ ...FAST, kvCapacityTokens: 1000 });
  const first = m.submit({ promptTokens: 600, maxTokens: 50 }, {}, 0);
  const big = m.submit({ promptTokens: 600, maxTokens: 50 }, {}, 1);
  const small = m.submit({ promptTokens: 10, maxTokens: 5 }, {}, 2);
  const d = m.beginStep(2)!;
  assert.equal(first.phase, 'running');
  assert.equal(big.phase, 'waiting');
  assert.equal(small.phase, 'waiting', 'no overtaking the queue head');
  m.endStep(2 + d);
  drain(m, 2 + d);
  assert.ok(small.firstTokenMs! >= big.firstTokenMs!, 'admitted together with the head at best');
});

test('abort frees KV at once, from the queue or mid-step, and the request emits nothing more', () => {
  const m = new EngineModel(FAST);
  let tokens = 0;
  const a = m.submit({ promptTokens: 500, maxTokens: 100 }, { onToken: () => tokens++ }, 0);
  const w = m.submit({ promptTokens: 500, maxTokens: 100 }, {}, 0);
  const d = m.beginStep(0)!;
  assert.equal(m.state().kvTokens, 1000);
  a.abort();
  assert.equal(m.state().kvTokens, 500);
  m.endStep(d);
  assert.equal(tokens, 0, 'the step in flight does not emit for an aborted request');
  w.abort();
  w.abort();
  assert.deepEqual([m.state().kvTokens, m.state().running, m.counters.aborted], [0, 0, 2]);
  assert.equal(m.beginStep(d), undefined);

  const q = new EngineModel({ ...FAST, kvCapacityTokens: 600 });
  q.submit({ promptTokens: 500, maxTokens: 10 }, {}, 0);
  const queued = q.submit({ promptTokens: 500, maxTokens: 10 }, {}, 0);
  q.beginStep(0);
  assert.equal(q.state().waitingTokens, 500);
  queued.abort();
  assert.deepEqual([q.state().waiting, q.state().waitingTokens], [0, 0]);
});

test('a slower worker has higher TTFT under the same load', () => {
  const arrivals = createWorkload({ seed: 5, ratePerSec: 1.5, durationSec: 120 }).map((w) => ({
    at: w.at,
    promptTokens: w.promptTokens,
    maxTokens: w.maxTokens,
  }));
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const ttft = (params: object) =>
    median(runVirtual(new EngineModel(params), arrivals).records.map((r) => r.ttftMs!));
  const normal = ttft(ENGINE_CLASSES.a100);
  const slow = ttft(slowed(ENGINE_CLASSES.a100, 2));
  assert.ok(slow > 1.5 * normal, `slow p50 ${slow} vs normal ${normal}`);
});

test('output shorter than max_tokens stops with finish_reason stop', () => {
  const m = new EngineModel(FAST);
  let reason: FinishReason | undefined;
  const h = m.submit(
    { promptTokens: 10, maxTokens: 50, outputTokens: 7 },
    { onFinish: (r) => (reason = r) },
    0,
  );
  drain(m);
  assert.deepEqual([h.generated, reason], [7, 'stop']);
});

test('requests that can never fit are refused; bad parameters are refused', () => {
  const m = new EngineModel({ ...FAST, kvCapacityTokens: 1000 });
  assert.throws(() => m.submit({ promptTokens: 900, maxTokens: 101 }, {}, 0), {
    code: 'LLR_SIM_BAD_REQUEST',
  });
  assert.throws(() => m.submit({ promptTokens: 0, maxTokens: 1 }, {}, 0), { code: 'LLR_SIM_BAD_REQUEST' });
  assert.throws(() => resolveEngineParams({ kvCapacityTokens: -1 }), { code: 'LLR_SIM_CONFIG' });
  assert.throws(() => resolveEngineParams({ maxBatchSize: 64, maxBatchTokens: 64 }), {
    code: 'LLR_SIM_CONFIG',
  });
  assert.throws(() => resolveEngineParams({ kvCapacityTokens: 100, maxModelLen: 200 }), {
    code: 'LLR_SIM_CONFIG',
  });
  assert.equal(resolveEngineParams({ kvCapacityTokens: 5000 }).maxModelLen, 5000);
});

test('capacity estimate: faster classes serve more, and it is deterministic', () => {
  const sample = () => {
    const w = createWorkload({ seed: 3, ratePerSec: 100, durationSec: 10 });
    return (i: number) => ({
      promptTokens: w[i % w.length]!.promptTokens,
      maxTokens: w[i % w.length]!.maxTokens,
    });
  };
  const h100 = estimateCapacity(ENGINE_CLASSES.h100, sample(), 600);
  const a100 = estimateCapacity(ENGINE_CLASSES.a100, sample(), 600);
  const l40s = estimateCapacity(ENGINE_CLASSES.l40s, sample(), 600);
  assert.ok(h100.requestsPerSec > a100.requestsPerSec && a100.requestsPerSec > l40s.requestsPerSec);
  assert.deepEqual(estimateCapacity(ENGINE_CLASSES.a100, sample(), 600), a100);
});

test('engine params keep only engine keys from a worker spec', () => {
  const p = resolveEngineParams({ kvCapacityTokens: 5000, name: 'w1' } as object);
  assert.deepEqual(Object.keys(p).sort(), Object.keys(resolveEngineParams()).sort());
});
