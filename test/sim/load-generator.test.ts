import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { type PickOutcome, runLoad, SseScanner } from '../../src/sim/load-generator.js';
import { percentile, summarize } from '../../src/sim/load-summary.js';
import { CHAT_OUTPUT, CHAT_PROMPT, createWorkload } from '../../src/sim/workload.js';
import { startFleet } from '../../src/sim/fleet.js';
import { ENGINE_CLASSES } from '../../src/sim/scenarios.js';
import { estimatePromptTokens, makePromptText } from '../../src/sim/tokens.js';

test('workloads are seeded, Poisson-spaced and long-tailed; sizes do not depend on the rate', () => {
  const a = createWorkload({ seed: 42, ratePerSec: 10, durationSec: 200 });
  assert.deepEqual(createWorkload({ seed: 42, ratePerSec: 10, durationSec: 200 }), a);
  assert.notDeepEqual(createWorkload({ seed: 43, ratePerSec: 10, durationSec: 200 }), a);
  assert.ok(Math.abs(a.length - 2000) < 150, `~rate x duration arrivals, got ${a.length}`);
  const gaps = a.slice(1).map((x, i) => x.at - a[i]!.at);
  const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length;
  const sd = Math.sqrt(gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / gaps.length);
  assert.ok(Math.abs(mean - 100) < 10 && Math.abs(sd / mean - 1) < 0.1, 'exponential gaps: sd ~ mean');
  const prompts = a.map((x) => x.promptTokens).sort((x, y) => x - y);
  assert.ok(Math.abs(percentile(prompts, 0.5) - CHAT_PROMPT.median) < 60);
  assert.ok(percentile(prompts, 0.99) > 5 * percentile(prompts, 0.5), 'long tail');
  assert.ok(prompts[0]! >= CHAT_PROMPT.min && prompts.at(-1)! <= CHAT_PROMPT.max);
  assert.ok(a.every((x) => x.maxTokens >= CHAT_OUTPUT.min && x.maxTokens <= CHAT_OUTPUT.max));
  const slower = createWorkload({ seed: 42, ratePerSec: 2, durationSec: 200 });
  assert.deepEqual(
    slower.map((x) => [x.promptTokens, x.maxTokens]),
    a.slice(0, slower.length).map((x) => [x.promptTokens, x.maxTokens]),
  );
});

test('prompt text and the token estimate agree', () => {
  assert.equal(estimatePromptTokens({ prompt: makePromptText(777) }), 777);
  assert.equal(estimatePromptTokens({ prompt: [1, 2, 3] }), 3);
  assert.equal(estimatePromptTokens({ messages: [{ role: 'user', content: makePromptText(96) }] }), 100);
  assert.equal(
    estimatePromptTokens({ messages: [{ role: 'user', content: [{ type: 'text', text: 'abcdefgh' }] }] }),
    6,
  );
});

test('SSE scanner: first data, [DONE], usage, split across packets', () => {
  const s = new SseScanner();
  s.push('data: {"choices":[{"text":"a"}]}\n');
  assert.equal(s.firstData, false, 'an event is complete only at the blank line');
  s.push('\ndata: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":7,"total_tokens":8}}\n\nda');
  assert.equal(s.firstData, true);
  assert.equal(s.completionTokens, 7);
  assert.equal(s.done, false);
  s.push('ta: [DONE]\n\n');
  assert.equal(s.done, true);
  const e = new SseScanner();
  e.push('data: {"error":{"message":"boom"}}\n\n');
  assert.equal(e.streamError, true);
});

test('smoke: open-loop run against a 2-worker fleet records TTFT, e2e and the serving worker', async (t) => {
  const fleet = await startFleet(
    [
      { name: 'fast', ...ENGINE_CLASSES.h100, streamInterval: 4 },
      { name: 'slow', ...ENGINE_CLASSES.a100, loadFormat: 'vllm', streamInterval: 4 },
    ],
    { speedup: 10 },
  );
  t.after(() => fleet.close());
  const workload = createWorkload({ seed: 9, ratePerSec: 4, durationSec: 10 });
  let turn = 0;
  const outcomes: PickOutcome[] = [];
  const seen: string[] = [];
  const result = await runLoad({
    workload,
    timeScale: fleet.speedup,
    target: (req) => {
      seen.push(req.path);
      return { baseUrl: fleet.urls[turn++ % 2]!, done: (o) => outcomes.push(o) };
    },
  });
  const { records, summary } = result;
  assert.equal(records.length, workload.length);
  assert.equal(summary.errors, 0, JSON.stringify(summary.errorKinds));
  assert.ok(seen.every((p) => p === '/v1/chat/completions'));
  assert.deepEqual(outcomes, Array(workload.length).fill('success'));
  for (const r of records) {
    assert.ok(r.ok && r.ttftMs! > 0 && r.ttftMs! <= r.e2eMs!, JSON.stringify(r));
    assert.equal(r.completionTokens, r.maxTokens);
    assert.equal(r.worker, r.target === fleet.urls[0] ? 'fast' : 'slow');
  }
  assert.deepEqual(Object.keys(summary.share), ['fast', 'slow']);
  assert.ok(Math.abs(summary.share.fast! + summary.share.slow! - 1) < 1e-9);
  assert.ok(summary.ttftMs.p50 <= summary.ttftMs.p99 && summary.e2eMs.p99 >= summary.ttftMs.p99);
  const served = fleet.workers.reduce((a, w) => a + w.stats().served, 0);
  assert.equal(served, workload.length);
  for (const w of fleet.workers) assert.equal(w.state().kvTokens, 0);
  assert.equal(result.timeScale, 10);
});

test('failures are recorded per request, not thrown: refused, HTTP errors, truncated streams', async (t) => {
  const bad = createServer((req, res) => {
    req.resume();
    if (req.url === '/v1/completions') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[{"text":"x"}]}\n\n'); // no [DONE]
    } else {
      res.writeHead(503).end();
    }
  });
  await new Promise<void>((r) => bad.listen(0, '127.0.0.1', r));
  t.after(() => bad.close());
  const url = `http://127.0.0.1:${(bad.address() as AddressInfo).port}`;
  const workload = createWorkload({ seed: 1, ratePerSec: 50, durationSec: 0.1 });
  assert.ok(workload.length >= 2);

  const http503 = await runLoad({ target: url, workload });
  assert.deepEqual(http503.summary.errorKinds, { http_503: workload.length });
  assert.ok(Number.isNaN(http503.summary.ttftMs.p50));

  const truncated = await runLoad({ target: url, workload, api: 'completion' });
  assert.deepEqual(truncated.summary.errorKinds, { truncated: workload.length });

  const refused = await runLoad({ target: 'http://127.0.0.1:1', workload });
  assert.deepEqual(refused.summary.errorKinds, { ECONNREFUSED: workload.length });

  const noPick = await runLoad({
    target: () => Promise.reject(Object.assign(new Error('none'), { code: 'LLR_NO_HEALTHY_WORKER' })),
    workload,
  });
  assert.deepEqual(noPick.summary.errorKinds, { 'pick_failed:LLR_NO_HEALTHY_WORKER': workload.length });
  assert.equal(summarize(noPick.records).requests, workload.length);
});

test('an abort signal stops the schedule and cuts requests in flight', async (t) => {
  let arrived = 0;
  let first: () => void = () => {};
  const gotOne = new Promise<void>((resolve) => (first = resolve));
  const hang = createServer((req) => {
    req.resume();
    arrived++;
    first();
  });
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
  t.after(() => {
    hang.closeAllConnections();
    hang.close();
  });
  const url = `http://127.0.0.1:${(hang.address() as AddressInfo).port}`;
  const workload = createWorkload({ seed: 2, ratePerSec: 2, durationSec: 3600 });
  const ac = new AbortController();
  const run = runLoad({ target: url, workload, signal: ac.signal });
  await gotOne;
  ac.abort();
  const { records, summary } = await run;
  assert.ok(records.length >= 1 && records.length < workload.length);
  assert.deepEqual(summary.errorKinds, { aborted: records.length });
  assert.equal(arrived, records.length);
});
