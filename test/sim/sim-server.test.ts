import assert from 'node:assert/strict';
import { request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { startFleet } from '../../src/sim/fleet.js';
import { SCENARIO_NAMES, scenarioWorkers } from '../../src/sim/scenarios.js';
import { makePromptText } from '../../src/sim/tokens.js';
import { get, post, sseData, startWorker, until } from './sim-helpers.js';

interface Chunk {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: {
    index: number;
    text?: string;
    delta?: { role?: string; content?: string };
    finish_reason: string | null;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

test('streamed completions are OpenAI SSE: text chunks, finish_reason, usage, [DONE]', async (t) => {
  const w = await startWorker(t, { streamInterval: 3 });
  const res = await post(`${w.url}/v1/completions`, {
    model: 'm1',
    prompt: makePromptText(100),
    max_tokens: 10,
    stream: true,
    stream_options: { include_usage: true },
  });
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^text\/event-stream/);
  assert.equal(res.headers['x-sim-worker'], 'w-test');
  const data = sseData(res.body);
  assert.equal(data.at(-1), '[DONE]');
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as Chunk);
  const content = chunks.filter((c) => c.choices.length > 0);
  // first token alone, then every 3 tokens, the last ones with finish_reason: 1, 4, 7, 10
  assert.equal(content.length, 4);
  for (const c of content) {
    assert.equal(c.object, 'text_completion');
    assert.equal(c.model, 'm1');
    assert.equal(typeof c.choices[0]!.text, 'string');
    assert.equal(c.choices[0]!.index, 0);
    assert.ok(c.id.startsWith('cmpl-') && c.id === content[0]!.id);
  }
  assert.deepEqual(
    content.map((c) => c.choices[0]!.finish_reason),
    [null, null, null, 'length'],
  );
  const usage = chunks.at(-1)!;
  assert.deepEqual(usage.choices, []);
  assert.deepEqual(usage.usage, { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 });
  assert.ok(content.map((c) => c.choices[0]!.text).join('').length >= 30, 'about 4 characters per token');
});

test('streamed chat completions carry the role first and content deltas', async (t) => {
  const w = await startWorker(t);
  const res = await post(`${w.url}/v1/chat/completions`, {
    messages: [{ role: 'user', content: 'hello there' }],
    max_tokens: 5,
    stream: true,
  });
  const data = sseData(res.body);
  assert.equal(data.at(-1), '[DONE]');
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as Chunk);
  assert.equal(chunks.length, 5, 'one chunk per token by default, no usage chunk unless asked');
  assert.deepEqual(chunks[0]!.choices[0]!.delta?.role, 'assistant');
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.model, 'sim-model');
    assert.equal(typeof c.choices[0]!.delta?.content, 'string');
    assert.ok(c.id.startsWith('chatcmpl-'));
    assert.equal('usage' in c, false);
  }
  assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, 'length');
});

test('non-streaming responses are one JSON with usage; size from header, prompt or messages', async (t) => {
  const w = await startWorker(t);
  const a = await post(
    `${w.url}/v1/completions`,
    { prompt: 'x', max_tokens: 6 },
    { 'x-sim-prompt-tokens': '321', 'x-sim-output-tokens': '4' },
  );
  assert.equal(a.status, 200);
  const ja = JSON.parse(a.body) as {
    object: string;
    choices: { text: string; finish_reason: string }[];
    usage: object;
  };
  assert.equal(ja.object, 'text_completion');
  assert.equal(ja.choices[0]!.finish_reason, 'stop', 'stopped before max_tokens');
  assert.deepEqual(ja.usage, { prompt_tokens: 321, completion_tokens: 4, total_tokens: 325 });

  const b = await post(`${w.url}/v1/chat/completions`, {
    messages: [{ role: 'user', content: makePromptText(200) }],
    max_completion_tokens: 3,
  });
  const jb = JSON.parse(b.body) as {
    object: string;
    choices: { message: { role: string; content: string }; finish_reason: string }[];
    usage: { prompt_tokens: number; completion_tokens: number };
  };
  assert.equal(jb.object, 'chat.completion');
  assert.equal(jb.choices[0]!.message.role, 'assistant');
  assert.equal(jb.choices[0]!.finish_reason, 'length');
  assert.deepEqual([jb.usage.prompt_tokens, jb.usage.completion_tokens], [204, 3]);
  assert.equal(w.stats().served, 2);
});

test('bad requests get OpenAI-shaped 400s; unknown routes 404; /health is 200', async (t) => {
  const w = await startWorker(t, { kvCapacityTokens: 1000 });
  const cases: [unknown, Record<string, string>][] = [
    ['{not json', {}],
    [{ prompt: 'x', max_tokens: 0 }, {}],
    [{ prompt: 'x', max_tokens: 10 }, { 'x-sim-prompt-tokens': '995' }],
    [{ prompt: 'x', max_tokens: 10 }, { 'x-sim-prompt-tokens': 'abc' }],
  ];
  for (const [body, headers] of cases) {
    const res = await post(`${w.url}/v1/completions`, body, headers);
    assert.equal(res.status, 400, res.body);
    const err = (JSON.parse(res.body) as { error: { message: string; type: string } }).error;
    assert.equal(err.type, 'invalid_request_error');
    assert.ok(err.message.length > 0);
  }
  assert.equal(w.stats().rejected, cases.length);
  assert.equal((await get(`${w.url}/nope`)).status, 404);
  assert.equal((await get(`${w.url}/health`)).status, 200);
  const models = JSON.parse((await get(`${w.url}/v1/models`)).body) as { data: { id: string }[] };
  assert.equal(models.data[0]!.id, 'sim-model');
});

test('KV overflow over HTTP: preemptions counted, every request still completes in full', async (t) => {
  const w = await startWorker(t, { kvCapacityTokens: 1200, admitWatermark: 0 });
  const res = await Promise.all(
    [0, 1, 2].map(() =>
      post(
        `${w.url}/v1/completions`,
        { prompt: 'x', max_tokens: 150, stream: true },
        { 'x-sim-prompt-tokens': '300' },
      ),
    ),
  );
  for (const r of res) {
    const data = sseData(r.body);
    assert.equal(data.at(-1), '[DONE]');
    const text = data
      .slice(0, -1)
      .map((d) => (JSON.parse(d) as Chunk).choices[0]!.text)
      .join('');
    assert.equal(text.length > 0, true);
  }
  const s = w.stats();
  assert.ok(s.preemptions >= 1, `expected preemptions, stats ${JSON.stringify(s)}`);
  assert.ok(s.peakKvTokens <= 1200);
  assert.equal(s.generatedTokens, 450, 'recomputation regenerates no token twice');
  assert.deepEqual([s.served, s.kvTokens, s.running, s.waiting], [3, 0, 0, 0]);
  const viaHttp = JSON.parse((await get(`${w.url}/sim/stats`)).body) as {
    preemptions: number;
    served: number;
  };
  assert.deepEqual([viaHttp.preemptions, viaHttp.served], [s.preemptions, 3]);
});

test('a client that disconnects aborts its request and frees its KV', async (t) => {
  const w = await startWorker(t, {}, 1);
  const req = request(`${w.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sim-prompt-tokens': '2000' },
  });
  const firstChunk = new Promise<void>((resolve, reject) => {
    req.on('response', (res) => res.once('data', () => resolve()));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET') reject(err);
    });
  });
  req.end(JSON.stringify({ prompt: 'x', max_tokens: 5000, stream: true }));
  await firstChunk;
  const during = w.state();
  assert.equal(during.running, 1);
  assert.ok(during.kvTokens >= 2000);
  req.destroy();
  await until(() => w.state().kvTokens === 0, 'KV to be freed after the disconnect');
  assert.deepEqual([w.state().running, w.stats().aborted, w.stats().served], [0, 1, 0]);
});

test('time scaling: real TTFT is at least the model TTFT divided by the speedup', async (t) => {
  // one 4000-token prompt on an idle worker: 2 chunks -> 2 x 10 ms + 4000 / 20k s = 220 model ms
  for (const speedup of [1, 4]) {
    const w = await startWorker(t, {}, speedup);
    const start = performance.now();
    let ttft = 0;
    await new Promise<void>((resolve, reject) => {
      const req = request(`${w.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sim-prompt-tokens': '4000' },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        res.once('data', () => (ttft = performance.now() - start));
        res.on('end', resolve).resume();
      });
      req.end(JSON.stringify({ prompt: 'x', max_tokens: 2, stream: true }));
    });
    assert.ok(ttft >= 220 / speedup - 1, `speedup ${speedup}: ttft ${ttft} ms`);
  }
});

test('data-parallel ranks split requests round-robin and report per rank', async (t) => {
  const w = await startWorker(t, { dpRanks: 2, loadFormat: 'sglang' });
  await Promise.all(
    [0, 1, 2, 3].map(() =>
      post(`${w.url}/v1/completions`, { prompt: 'x', max_tokens: 3 }, { 'x-sim-prompt-tokens': '50' }),
    ),
  );
  const loads = JSON.parse((await get(`${w.url}/v1/loads`)).body) as { loads: { dp_rank: number }[] };
  assert.deepEqual(
    loads.loads.map((l) => l.dp_rank),
    [0, 1],
  );
  assert.equal(w.state().ranks.length, 2);
  assert.equal(w.stats().served, 4);
  assert.equal(w.state().kvCapacityTokens, 16000);
});

test('fleets: every scenario starts, names are unique, and close stops them all', async (t) => {
  for (const name of SCENARIO_NAMES) {
    const specs = scenarioWorkers(name);
    assert.equal(new Set(specs.map((s) => s.name)).size, specs.length);
  }
  assert.throws(() => scenarioWorkers('nope'), { code: 'LLR_SIM_CONFIG' });
  const fleet = await startFleet('mixed', { speedup: 10 });
  t.after(() => fleet.close());
  assert.equal(fleet.workers.length, 4);
  assert.equal(new Set(fleet.urls).size, 4);
  const formats = new Set(fleet.workers.map((w) => w.loadFormat));
  assert.deepEqual([...formats].sort(), ['sglang', 'vllm']);
  const caps = new Set(fleet.workers.map((w) => w.state().kvCapacityTokens));
  assert.ok(caps.size >= 3, 'heterogeneous KV capacities');
  const first = fleet.workers[0]!;
  assert.equal(fleet.get(first.name), first);
  assert.equal(fleet.get(first.id), first);
  await fleet.close();
  await assert.rejects(fetch(`${first.url}/health`));
  await assert.rejects(startFleet([{ name: 'a' }, { name: 'a' }]), { code: 'LLR_SIM_CONFIG' });
});
