import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LoadSnapshot } from '../../src/core/load-snapshot.js';
import { Worker, type WorkerSpec } from '../../src/core/worker.js';
import type { LoadSource } from '../../src/poller/engine.js';
import { detectEngine } from '../../src/poller/engines/auto.js';
import { createLoadSource } from '../../src/poller/engines/registry.js';
import { LoadParseError, PollRequestError, PrometheusParseError } from '../../src/poller/errors.js';
import { context, rounded } from './engine-context.js';
import { fixture, listen, routes, type Route } from './helpers.js';

type T = { after: (fn: () => Promise<void>) => void };

async function serve(t: T, table: Record<string, Route>) {
  const server = await listen(routes(table));
  t.after(() => server.close());
  return server;
}

function source(url: string, spec: Omit<WorkerSpec, 'url'>): { worker: Worker; source: LoadSource } {
  const worker = new Worker({ url, ...spec });
  return { worker, source: createLoadSource(worker) };
}

/** Reads once and drops `at` for comparison. */
async function readOnce(src: LoadSource, base: string, now = () => 1000): Promise<Omit<LoadSnapshot, 'at'>> {
  const snapshot = await src.read(context(base, now));
  assert.ok(snapshot, 'a snapshot');
  assert.equal(snapshot.at, now());
  const { at: _at, ...rest } = snapshot;
  return rounded(rest);
}

const CASES: {
  name: string;
  engine: WorkerSpec['engine'];
  table: Record<string, Route>;
  spec?: Omit<WorkerSpec, 'url' | 'engine'>;
  expected: Omit<LoadSnapshot, 'at'>;
}[] = [
  {
    name: 'sglang /v1/loads, current envelope, 2 DP ranks',
    engine: 'sglang',
    table: { '/v1/loads?include=core': fixture('sglang-v1-loads.json') },
    expected: {
      kvUsage: 0.345,
      running: 52,
      waiting: 4,
      waitingTokens: 9216,
      throughput: 3600.89,
      capacityTokens: 1228800,
      ranks: [
        {
          rank: 0,
          kvUsage: 0.49,
          running: 37,
          waiting: 4,
          waitingTokens: 9216,
          throughput: 2411.37,
          capacityTokens: 614400,
        },
        {
          rank: 1,
          kvUsage: 0.2,
          running: 15,
          waiting: 0,
          waitingTokens: 0,
          throughput: 1189.52,
          capacityTokens: 614400,
        },
      ],
    },
  },
  {
    name: 'sglang /v1/loads, early-2026 envelope',
    engine: 'sglang',
    table: { '/v1/loads?include=core': fixture('sglang-v1-loads-early.json') },
    expected: {
      kvUsage: 0.1563,
      running: 5,
      waiting: 2,
      throughput: 812.4,
      capacityTokens: 262144,
      ranks: [
        { rank: 0, kvUsage: 0.1563, running: 5, waiting: 2, throughput: 812.4, capacityTokens: 262144 },
      ],
    },
  },
  {
    name: 'sglang /metrics when /v1/loads is absent',
    engine: 'sglang',
    table: { '/metrics': fixture('sglang-metrics.txt') },
    expected: {
      kvUsage: 0.49,
      running: 37,
      waiting: 4,
      throughput: 2411.37,
      capacityTokens: 614400,
      ranks: [
        { rank: 0, kvUsage: 0.49, running: 37, waiting: 4, throughput: 2411.37, capacityTokens: 614400 },
      ],
    },
  },
  {
    name: 'sglang /metrics: DP ranks summed, TP copies not',
    engine: 'sglang',
    table: { '/metrics': fixture('sglang-metrics-dp.txt') },
    expected: {
      kvUsage: 0.4,
      running: 30,
      waiting: 4,
      throughput: 1300,
      ranks: [
        { rank: 0, kvUsage: 0.6, running: 20, waiting: 3, throughput: 900 },
        { rank: 1, kvUsage: 0.2, running: 10, waiting: 1, throughput: 400 },
      ],
    },
  },
  {
    name: 'sglang /metrics with the sglang_ spelling',
    engine: 'sglang',
    table: { '/metrics': fixture('sglang-metrics.txt').replaceAll('sglang:', 'sglang_') },
    expected: {
      kvUsage: 0.49,
      running: 37,
      waiting: 4,
      throughput: 2411.37,
      capacityTokens: 614400,
      ranks: [
        { rank: 0, kvUsage: 0.49, running: 37, waiting: 4, throughput: 2411.37, capacityTokens: 614400 },
      ],
    },
  },
  {
    name: 'sglang legacy /get_load: num_reqs counts running and waiting, no usage',
    engine: 'sglang',
    table: { '/get_load': fixture('sglang-get-load.json') },
    expected: { running: 5, waiting: 2, ranks: [{ rank: 0, running: 5, waiting: 2 }] },
  },
  {
    name: 'vllm v1: engine label = DP rank; usage averaged, counts summed',
    engine: 'vllm',
    table: { '/metrics': fixture('vllm-metrics-v1.txt') },
    expected: {
      kvUsage: 0.3453,
      running: 52,
      waiting: 4,
      ranks: [
        { rank: 0, kvUsage: 0.4875, running: 37, waiting: 4 },
        { rank: 1, kvUsage: 0.2031, running: 15, waiting: 0 },
      ],
    },
  },
  {
    name: 'vllm v0: gpu_cache_usage_perc, no engine label',
    engine: 'vllm',
    table: { '/metrics': fixture('vllm-metrics-v0.txt') },
    expected: {
      kvUsage: 0.75,
      running: 3,
      waiting: 5,
      ranks: [{ rank: 0, kvUsage: 0.75, running: 3, waiting: 5 }],
    },
  },
  {
    name: 'llamacpp: no KV gauge means unknown usage, not 0',
    engine: 'llamacpp',
    table: { '/metrics': fixture('llamacpp-metrics.txt') },
    expected: { running: 2, waiting: 1, ranks: [{ rank: 0, running: 2, waiting: 1 }] },
  },
  {
    name: 'llamacpp: an older server with kv_cache_usage_ratio',
    engine: 'llamacpp',
    table: {
      '/metrics': `${fixture('llamacpp-metrics.txt')}# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio 0.25\n`,
    },
    expected: {
      kvUsage: 0.25,
      running: 2,
      waiting: 1,
      ranks: [{ rank: 0, kvUsage: 0.25, running: 2, waiting: 1 }],
    },
  },
  {
    name: 'tgi without maxBatchTotalTokens: usage unknown',
    engine: 'tgi',
    table: { '/metrics': fixture('tgi-metrics.txt') },
    expected: { running: 12, waiting: 3, ranks: [{ rank: 0, running: 12, waiting: 3 }] },
  },
  {
    name: 'tgi with maxBatchTotalTokens: usage = batch max tokens / configured max',
    engine: 'tgi',
    spec: { maxBatchTotalTokens: 131072 },
    table: { '/metrics': fixture('tgi-metrics.txt') },
    expected: {
      kvUsage: 0.75,
      running: 12,
      waiting: 3,
      capacityTokens: 131072,
      ranks: [{ rank: 0, kvUsage: 0.75, running: 12, waiting: 3, capacityTokens: 131072 }],
    },
  },
  {
    name: 'trtllm-serve',
    engine: 'trtllm',
    table: { '/metrics': fixture('trtllm-serve-metrics.txt') },
    expected: {
      kvUsage: 0.62,
      running: 14,
      waiting: 2,
      capacityTokens: 262144,
      ranks: [{ rank: 0, kvUsage: 0.62, running: 14, waiting: 2, capacityTokens: 262144 }],
    },
  },
  {
    name: 'trtllm via Triton: fraction, scheduled and waiting series',
    engine: 'trtllm',
    table: { '/metrics': fixture('trtllm-triton-metrics.txt') },
    expected: {
      kvUsage: 0.4875,
      running: 18,
      waiting: 3,
      capacityTokens: 399360,
      ranks: [{ rank: 0, kvUsage: 0.4875, running: 18, waiting: 3, capacityTokens: 399360 }],
    },
  },
  {
    name: 'json with default field names at /load',
    engine: 'json',
    table: { '/load': JSON.stringify({ kvUsage: 0.3, running: 4, waiting: 1, extra: 'ignored' }) },
    expected: {
      kvUsage: 0.3,
      running: 4,
      waiting: 1,
      ranks: [{ rank: 0, kvUsage: 0.3, running: 4, waiting: 1 }],
    },
  },
  {
    name: 'json with a configured path, ranks array and nested field paths',
    engine: 'json',
    spec: {
      loadPath: '/internal/stats?fmt=json',
      loadFields: { ranks: 'data.gpus', kvUsage: 'kv.frac', running: 'active', waiting: 'queue.0' },
    },
    table: {
      '/internal/stats?fmt=json': JSON.stringify({
        data: {
          gpus: [
            { kv: { frac: 0.5 }, active: 3, queue: [2] },
            { kv: { frac: 0.1 }, active: 1, queue: [0] },
          ],
        },
      }),
    },
    expected: {
      kvUsage: 0.3,
      running: 4,
      waiting: 2,
      ranks: [
        { rank: 0, kvUsage: 0.5, running: 3, waiting: 2 },
        { rank: 1, kvUsage: 0.1, running: 1, waiting: 0 },
      ],
    },
  },
];

for (const c of CASES) {
  test(`adapter: ${c.name}`, async (t) => {
    const server = await serve(t, c.table);
    const { source: src } = source(server.url, { engine: c.engine, ...c.spec });
    assert.deepEqual(await readOnce(src, server.url), c.expected);
  });
}

test('sglang: the endpoint that answered is remembered; one request per later poll', async (t) => {
  const seen: string[] = [];
  const server = await listen((req, res) => {
    seen.push(req.url ?? '');
    if (req.url === '/metrics') res.end(fixture('sglang-metrics.txt'));
    else res.writeHead(404).end();
  });
  t.after(() => server.close());
  const { source: src } = source(server.url, { engine: 'sglang' });
  await readOnce(src, server.url);
  await readOnce(src, server.url);
  assert.deepEqual(seen, ['/v1/loads?include=core', '/metrics', '/metrics']);
});

test('sglang: gen_throughput is 0 when nothing runs (it holds its last value when idle)', async (t) => {
  const idle = JSON.parse(fixture('sglang-v1-loads.json')) as { loads: Record<string, unknown>[] };
  idle.loads[1]!.num_running_reqs = 0;
  const server = await serve(t, { '/v1/loads?include=core': JSON.stringify(idle) });
  const snap = await readOnce(source(server.url, { engine: 'sglang' }).source, server.url);
  assert.deepEqual(
    snap.ranks?.map((r) => r.throughput),
    [2411.37, 0],
  );
});

test('vllm: throughput from the generation counter between polls; a counter reset skips one interval', async (t) => {
  let generated = [1000, 500];
  const page = () =>
    [
      '# TYPE vllm:num_requests_running gauge',
      ...generated.map((_, e) => `vllm:num_requests_running{engine="${e}"} 1`),
      '# TYPE vllm:generation_tokens_total counter',
      ...generated.map((g, e) => `vllm:generation_tokens_total{engine="${e}"} ${g}`),
    ].join('\n');
  const server = await serve(t, { '/metrics': page });
  const src = source(server.url, { engine: 'vllm' }).source;
  let now = 10_000;
  const clock = () => now;
  assert.equal((await readOnce(src, server.url, clock)).throughput, undefined, 'no rate from one sample');
  generated = [5000, 2500];
  now += 2000;
  const second = await readOnce(src, server.url, clock);
  assert.equal(second.throughput, 3000);
  assert.deepEqual(
    second.ranks?.map((r) => r.throughput),
    [2000, 1000],
  );
  generated = [100, 2600]; // engine 0 restarted
  now += 1000;
  assert.equal((await readOnce(src, server.url, clock)).throughput, undefined, 'restart interval skipped');
  generated = [600, 3100];
  now += 1000;
  assert.equal((await readOnce(src, server.url, clock)).throughput, 1000);
});

test('llamacpp: throughput from tokens_predicted_total', async (t) => {
  let predicted = 67311;
  const server = await serve(t, {
    '/metrics': () => fixture('llamacpp-metrics.txt').replace('67311', String(predicted)),
  });
  const src = source(server.url, { engine: 'llamacpp' }).source;
  let now = 0;
  await readOnce(src, server.url, () => now);
  predicted += 50;
  now = 500;
  assert.equal((await readOnce(src, server.url, () => now)).throughput, 100);
});

const MALFORMED: {
  name: string;
  engine: WorkerSpec['engine'];
  table: Record<string, Route>;
  error: RegExp;
}[] = [
  {
    name: 'vllm usage above 1',
    engine: 'vllm',
    table: { '/metrics': fixture('vllm-metrics-v1.txt').replace('} 0.4875', '} 1.5') },
    error: /vllm:kv_cache_usage_perc must be in 0\.\.1, got 1\.5/,
  },
  {
    name: 'vllm negative count',
    engine: 'vllm',
    table: { '/metrics': fixture('vllm-metrics-v1.txt').replace('} 37.0', '} -2') },
    error: /vllm:num_requests_running must be a finite number >= 0, got -2/,
  },
  {
    name: 'vllm NaN where a number is required',
    engine: 'vllm',
    table: { '/metrics': fixture('vllm-metrics-v1.txt').replace('} 0.2031', '} NaN') },
    error: /vllm:kv_cache_usage_perc is NaN/,
  },
  {
    name: 'vllm +Inf count',
    engine: 'vllm',
    table: { '/metrics': fixture('vllm-metrics-v1.txt').replace('} 15.0', '} +Inf') },
    error: /must be a finite number/,
  },
  {
    name: 'a /metrics page of another engine',
    engine: 'vllm',
    table: { '/metrics': fixture('llamacpp-metrics.txt') },
    error: /none of vllm:kv_cache_usage_perc, vllm:num_requests_running, vllm:num_requests_waiting/,
  },
  {
    name: 'garbage text',
    engine: 'trtllm',
    table: { '/metrics': 'trtllm_num_requests_running{model_name="llama} 2\n' },
    error: /line 1: unterminated label value/,
  },
  {
    name: 'sglang bad JSON',
    engine: 'sglang',
    table: { '/v1/loads?include=core': '{"loads": [{"token_usage": NaN}]}' },
    error: /\/v1\/loads is not valid JSON/,
  },
  {
    name: 'sglang usage above 1',
    engine: 'sglang',
    table: { '/v1/loads?include=core': '{"loads": [{"token_usage": 1.2, "num_running_reqs": 1}]}' },
    error: /loads\[0\]\.token_usage must be in 0\.\.1/,
  },
  {
    name: 'sglang count as a string',
    engine: 'sglang',
    table: { '/v1/loads?include=core': '{"loads": [{"num_running_reqs": "7"}]}' },
    error: /loads\[0\]\.num_running_reqs must be a finite number >= 0, got "7"/,
  },
  {
    name: 'sglang no ranks',
    engine: 'sglang',
    table: { '/v1/loads?include=core': '{"loads": []}' },
    error: /has no per-rank loads/,
  },
  {
    name: 'json without any configured field',
    engine: 'json',
    table: { '/load': '{"status":"fine"}' },
    error: /none of the configured load fields/,
  },
  {
    name: 'json negative waiting',
    engine: 'json',
    table: { '/load': '{"running":1,"waiting":-1}' },
    error: /waiting must be a finite number >= 0, got -1/,
  },
];

for (const c of MALFORMED) {
  test(`malformed payload is a parse error: ${c.name}`, async (t) => {
    const server = await serve(t, c.table);
    await assert.rejects(
      source(server.url, { engine: c.engine }).source.read(context(server.url)),
      (err: unknown) =>
        (err instanceof LoadParseError || err instanceof PrometheusParseError) && c.error.test(err.message),
    );
  });
}

test('optional fields that are NaN are unknown, not errors and not 0', async (t) => {
  const page = `${fixture('vllm-metrics-v0.txt')}`.replace(
    'generation_tokens_total{model_name="llama"} 123456.0',
    'generation_tokens_total{model_name="llama"} NaN',
  );
  const server = await serve(t, { '/metrics': page });
  const snap = await readOnce(source(server.url, { engine: 'vllm' }).source, server.url);
  assert.equal('throughput' in snap, false);
});

test('status errors: 5xx and 4xx are http_error with the status', async (t) => {
  const server = await serve(t, { '/metrics': { status: 503 }, '/load': { status: 401 } });
  await assert.rejects(
    source(server.url, { engine: 'vllm' }).source.read(context(server.url)),
    (err: unknown) => {
      return (
        err instanceof PollRequestError &&
        err.result === 'http_error' &&
        err.status === 503 &&
        err.countsAgainstHealth
      );
    },
  );
  await assert.rejects(
    source(server.url, { engine: 'json' }).source.read(context(server.url)),
    (err: unknown) => {
      return err instanceof PollRequestError && err.status === 401 && !err.countsAgainstHealth;
    },
  );
  const empty = await serve(t, {});
  await assert.rejects(source(empty.url, { engine: 'sglang' }).source.read(context(empty.url)), {
    result: 'http_error',
    status: 404,
    message: 'none of /v1/loads?include=core, /metrics, /get_load is served',
  });
});

test('none: health only, any answer below 500 is alive', async (t) => {
  let status = 200;
  const seen: string[] = [];
  const server = await listen((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(status).end();
  });
  t.after(() => server.close());
  const src = source(server.url, { engine: 'none' }).source;
  assert.equal(await src.read(context(server.url)), undefined);
  status = 404;
  assert.equal(await src.read(context(server.url)), undefined);
  status = 500;
  await assert.rejects(src.read(context(server.url)), { code: 'LLR_POLL_FAILED', result: 'http_error' });
  assert.deepEqual(seen, ['/health', '/health', '/health']);
});

const DETECT: [string, Record<string, Route>, string][] = [
  ['sglang /v1/loads', { '/v1/loads?include=core': fixture('sglang-v1-loads.json') }, 'sglang'],
  ['sglang /metrics only', { '/metrics': fixture('sglang-metrics.txt') }, 'sglang'],
  ['vllm', { '/metrics': fixture('vllm-metrics-v1.txt') }, 'vllm'],
  ['vllm old', { '/metrics': fixture('vllm-metrics-v0.txt') }, 'vllm'],
  ['llamacpp', { '/metrics': fixture('llamacpp-metrics.txt') }, 'llamacpp'],
  ['tgi', { '/metrics': fixture('tgi-metrics.txt') }, 'tgi'],
  ['trtllm-serve', { '/metrics': fixture('trtllm-serve-metrics.txt') }, 'trtllm'],
  ['triton', { '/metrics': fixture('trtllm-triton-metrics.txt') }, 'trtllm'],
  [
    'other JSON at /v1/loads, unknown metrics',
    { '/v1/loads?include=core': '{"ok":1}', '/metrics': 'foo 1' },
    'none',
  ],
  ['nothing served', {}, 'none'],
  ['llama.cpp without --metrics (501)', { '/metrics': { status: 501 } }, 'none'],
];

for (const [name, table, engine] of DETECT) {
  test(`auto detection: ${name} -> ${engine}`, async (t) => {
    const server = await serve(t, table);
    assert.equal(await detectEngine(context(server.url)), engine);
  });
}

test('auto detection fails (to retry later) on 5xx, refused auth or a dead server', async (t) => {
  const server = await serve(t, { '/v1/loads?include=core': { status: 404 }, '/metrics': { status: 401 } });
  await assert.rejects(detectEngine(context(server.url)), { result: 'http_error', status: 401 });
  const broken = await serve(t, { '/v1/loads?include=core': { status: 502 } });
  await assert.rejects(detectEngine(context(broken.url)), { result: 'http_error', status: 502 });
  const dead = await listen(() => {});
  await dead.close();
  await assert.rejects(detectEngine(context(dead.url)), { result: 'error' });
});

test('auto source: detects once, records worker.detectedEngine, then reads like that engine', async (t) => {
  const seen: string[] = [];
  const server = await listen((req, res) => {
    seen.push(req.url ?? '');
    if (req.url === '/metrics') res.end(fixture('vllm-metrics-v0.txt'));
    else res.writeHead(404).end();
  });
  t.after(() => server.close());
  const { worker, source: src } = source(server.url, { engine: 'auto' });
  assert.equal(src.engine, undefined);
  assert.equal(worker.detectedEngine, undefined);
  assert.equal((await readOnce(src, server.url)).kvUsage, 0.75);
  assert.equal(src.engine, 'vllm');
  assert.equal(worker.detectedEngine, 'vllm');
  await readOnce(src, server.url);
  assert.deepEqual(seen, ['/v1/loads?include=core', '/metrics', '/metrics', '/metrics']);
});

test('sglang: an unreadable /v1/loads falls back to /metrics; a remembered endpoint that breaks is re-probed', async (t) => {
  let loads = '{"future_envelope": true}';
  const seen: string[] = [];
  const server = await listen((req, res) => {
    seen.push(req.url ?? '');
    if (req.url === '/metrics') res.end(fixture('sglang-metrics.txt'));
    else if (req.url === '/v1/loads?include=core') res.end(loads);
    else res.writeHead(404).end();
  });
  t.after(() => server.close());
  const viaMetrics = source(server.url, { engine: 'sglang' }).source;
  assert.equal((await readOnce(viaMetrics, server.url)).running, 37);
  assert.equal((await readOnce(viaMetrics, server.url)).running, 37);
  assert.deepEqual(seen.splice(0), ['/v1/loads?include=core', '/metrics', '/metrics']);

  loads = fixture('sglang-v1-loads.json');
  const viaLoads = source(server.url, { engine: 'sglang' }).source;
  assert.equal((await readOnce(viaLoads, server.url)).running, 52);
  assert.equal((await readOnce(viaLoads, server.url)).running, 52);
  assert.deepEqual(seen.splice(0), ['/v1/loads?include=core', '/v1/loads?include=core']);
  loads = 'not json';
  await assert.rejects(viaLoads.read(context(server.url)), LoadParseError);
  assert.deepEqual(seen.splice(0), ['/v1/loads?include=core'], 'the failing poll costs one request');
  assert.equal((await readOnce(viaLoads, server.url)).running, 37, 'probed afresh');
  assert.deepEqual(seen.splice(0), ['/v1/loads?include=core', '/metrics']);
});
