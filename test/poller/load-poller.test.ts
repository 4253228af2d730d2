import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { test } from 'node:test';
import type { ConfigInput } from '../../src/config/schema.js';
import type { Worker } from '../../src/core/worker.js';
import type { PollResult } from '../../src/router.js';
import { createRouter, type Router } from '../../src/router.js';
import { fixture, healthBecomes, listen, nextPoll, routes, type TestServer } from './helpers.js';

type T = { after: (fn: () => Promise<void> | void) => void };

const FAST = { intervalSecs: 0.03, timeoutMs: 300, jitter: 0.1, unhealthyAfter: 3 };

function router(t: T, config: ConfigInput, logger?: Parameters<typeof createRouter>[1]): Router {
  const r = createRouter({ ...config, poller: { ...FAST, ...config.poller } }, logger);
  t.after(() => r.stop());
  return r;
}

async function server(t: T, handler: Parameters<typeof listen>[0]): Promise<TestServer> {
  const s = await listen(handler);
  t.after(() => s.close());
  return s;
}

/** A vLLM-shaped /metrics page with the given load. */
function vllmPage(load: { kv: number; running: number; waiting: number }): string {
  return [
    '# TYPE vllm:num_requests_running gauge',
    `vllm:num_requests_running{engine="0",model_name="m"} ${load.running}`,
    '# TYPE vllm:num_requests_waiting gauge',
    `vllm:num_requests_waiting{engine="0",model_name="m"} ${load.waiting}`,
    '# TYPE vllm:kv_cache_usage_perc gauge',
    `vllm:kv_cache_usage_perc{engine="0",model_name="m"} ${load.kv}`,
  ].join('\n');
}

const byUrl = (r: Router, s: TestServer): Worker => {
  const w = r.pool.list().find((x) => x.port === s.port);
  assert.ok(w, `worker for ${s.url}`);
  return w;
};

test('a fake engine whose load changes between polls: snapshots replace worker.load and steer least_load', async (t) => {
  const loads = { a: { kv: 0.9, running: 30, waiting: 5 }, b: { kv: 0.1, running: 2, waiting: 0 } };
  const a = await server(t, routes({ '/metrics': () => vllmPage(loads.a) }));
  const b = await server(t, routes({ '/metrics': () => vllmPage(loads.b) }));
  // A 0.1 s interval keeps reports fresh (3 intervals) even if this busy machine stalls the test.
  const r = router(t, { workers: [a.url, b.url], policy: 'least_load', poller: { intervalSecs: 0.1 } });
  const [wa, wb] = [byUrl(r, a), byUrl(r, b)];
  const fresh = (w: Worker, kv: number) =>
    nextPoll(r, (x, res) => x === w && res === 'ok' && x.load?.kvUsage === kv);
  const first = Promise.all([fresh(wa, 0.9), fresh(wb, 0.1)]);
  await r.start();
  await first;
  assert.equal(r.pick().worker, wb);
  const records = r.workers();
  assert.deepEqual(
    records.map((w) => [w.engine, w.kvUsage, w.running, w.waiting, typeof w.lastPollAt]),
    [
      ['vllm', 0.9, 30, 5, 'string'],
      ['vllm', 0.1, 2, 0, 'string'],
    ],
  );

  const before = wa.load;
  loads.a = { kv: 0.05, running: 1, waiting: 0 };
  loads.b = { kv: 0.95, running: 40, waiting: 9 };
  await Promise.all([fresh(wa, 0.05), fresh(wb, 0.95)]);
  assert.notEqual(wa.load, before, 'replaced as a whole, not mutated');
  assert.equal(before?.kvUsage, 0.9);
  for (const w of [wa, wb]) w.inFlight = 0;
  assert.equal(r.pick().worker, wa);
});

test('a killed worker goes unhealthy after N failed polls, is never picked, and comes back when restarted', async (t) => {
  const handler = routes({ '/metrics': () => vllmPage({ kv: 0.2, running: 1, waiting: 0 }) });
  const victim = await listen(handler);
  const other = await server(t, handler);
  const r = router(t, { workers: [victim.url, other.url], poller: { unhealthyAfter: 3 } });
  const w = byUrl(r, victim);
  const up = nextPoll(r, (x, res) => x === w && res === 'ok');
  await r.start();
  await up;

  const results: PollResult[] = [];
  const stopCollecting = r.observe({ onPoll: (x, res) => x === w && results.push(res) });
  const down = healthBecomes(r, w, false);
  await victim.close();
  const reason = await down;
  assert.deepEqual(results, ['error', 'error', 'error'], 'exactly N failed polls, then out');
  assert.match(reason, /^3 consecutive failed load polls \(error: /);
  for (let i = 0; i < 20; i++) {
    const lease = r.pick();
    assert.notEqual(lease.worker, w);
    lease.release();
  }

  const back = healthBecomes(r, w, true);
  const restarted = await listen(handler, victim.port);
  t.after(() => restarted.close());
  assert.equal(await back, 'load poll succeeded');
  stopCollecting();
  assert.equal(w.consecutiveFailures, 0);
  assert.equal(results.at(-1), 'ok');
});

test('5xx answers and timeouts count toward health; 4xx answers do not', async (t) => {
  let status = 503;
  const held: ServerResponse[] = [];
  const flaky = await server(t, (req, res) => {
    if (status === 0) return void held.push(res); // never answers: timeout
    res.writeHead(status).end(status === 200 ? vllmPage({ kv: 0.1, running: 0, waiting: 0 }) : 'no');
  });
  t.after(() => held.forEach((r) => r.destroy()));
  const r = router(t, { workers: [{ url: flaky.url, engine: 'vllm' }], poller: { timeoutMs: 150 } });
  const w = byUrl(r, flaky);
  const out = healthBecomes(r, w, false);
  await r.start();
  assert.match(await out, /\(http_error: GET \/metrics answered 503\)/);

  status = 200;
  await healthBecomes(r, w, true);
  status = 0;
  assert.match(await healthBecomes(r, w, false), /\(timeout: no complete answer within 150 ms\)/);

  status = 200;
  await healthBecomes(r, w, true);
  status = 404;
  const fourxx: PollResult[] = [];
  const stop = r.observe({ onPoll: (x, res) => x === w && fourxx.push(res) });
  await nextPoll(r, (x) => x === w && fourxx.length >= 6);
  stop();
  assert.ok(fourxx.every((res) => res === 'http_error'));
  assert.equal(w.healthy, true, 'a worker that answers 404 is alive');
  assert.equal(w.consecutiveFailures, 0);
});

test('malformed payloads: parse_error, logged once per change, the old snapshot ages out, nothing crashes', async (t) => {
  let body = vllmPage({ kv: 0.4, running: 3, waiting: 1 });
  const s = await server(t, routes({ '/metrics': () => body }));
  const logs: [string, string, Record<string, unknown>][] = [];
  const logger = {
    warn: (obj: object, msg: string) => logs.push(['warn', msg, obj as Record<string, unknown>]),
    info: (obj: object, msg: string) => logs.push(['info', msg, obj as Record<string, unknown>]),
  };
  const r = router(t, { workers: [{ url: s.url, engine: 'vllm' }] }, { logger });
  const w = byUrl(r, s);
  const good = nextPoll(r, (x, res) => x === w && res === 'ok');
  await r.start();
  await good;
  const snapshot = w.load;
  const lastPollAt = w.lastPollAt;

  let bad = 0;
  const stop = r.observe({ onPoll: (x, res) => x === w && res === 'parse_error' && (bad += 1) });
  const payloads = [
    vllmPage({ kv: 1.7, running: 3, waiting: 1 }),
    vllmPage({ kv: 0.4, running: -3, waiting: 1 }),
    vllmPage({ kv: Number.NaN, running: 3, waiting: 1 }),
    'vllm:num_requests_running{engine="0 3\n',
  ];
  for (const payload of payloads) {
    body = payload;
    const target = bad + 2;
    await nextPoll(r, (x) => x === w && bad >= target);
    assert.equal(w.load, snapshot, 'not refreshed');
    assert.equal(w.lastPollAt, lastPollAt);
    assert.equal(w.healthy, true, 'a parse error is not a dead worker');
  }
  stop();
  assert.deepEqual(
    logs.map(([level, msg, obj]) => [level, msg, obj.result]),
    [['warn', 'load poll failed', 'parse_error']],
    'one log line for the whole parse_error streak',
  );
  assert.match(String(logs[0]?.[2].err), /must be in 0\.\.1, got 1\.7/);

  body = vllmPage({ kv: 0.3, running: 3, waiting: 1 });
  await nextPoll(r, (x, res) => x === w && res === 'ok');
  assert.equal(w.load?.kvUsage, 0.3);
  assert.deepEqual(logs.at(-1)?.slice(0, 2), ['info', 'load poll recovered']);
});

test('an oversized payload is a too_large poll: no out-of-memory, no health change', async (t) => {
  let big = false;
  const s = await server(t, (req, res) => {
    if (!big) return void res.end(JSON.stringify({ kvUsage: 0.2, running: 1, waiting: 0 }));
    // Streamed without content-length, far past the cap, until the poller hangs up.
    res.writeHead(200);
    const chunk = `{"pad":"${'x'.repeat(16 * 1024)}"}`;
    const pump = (): void => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', pump);
    };
    res.on('close', () => res.removeAllListeners('drain'));
    pump();
  });
  const r = router(t, { workers: [{ url: s.url, engine: 'json' }], poller: { maxResponseBytes: 4096 } });
  const w = byUrl(r, s);
  const ok = nextPoll(r, (x, res) => x === w && res === 'ok');
  await r.start();
  await ok;
  const snapshot = w.load;
  big = true;
  await nextPoll(r, (x, res) => x === w && res === 'too_large');
  await nextPoll(r, (x, res) => x === w && res === 'too_large');
  assert.equal(w.load, snapshot);
  assert.equal(w.healthy, true);
});

test('never two polls of one worker at once, even when a poll outlasts the interval', async (t) => {
  let current = 0;
  let peak = 0;
  let served = 0;
  const s = await server(t, (_req, res) => {
    current += 1;
    peak = Math.max(peak, current);
    setTimeout(() => {
      current -= 1;
      served += 1;
      res.end(JSON.stringify({ running: 1, waiting: 0 }));
    }, 60);
  });
  const r = router(t, {
    workers: [{ url: s.url, engine: 'json' }],
    poller: { intervalSecs: 0.01, timeoutMs: 1000 },
  });
  const w = byUrl(r, s);
  await r.start();
  for (let i = 0; i < 4; i++) {
    // pollNow joins the poll in flight rather than starting another.
    const [x, y] = await Promise.all([r.poller.pollNow(w), r.poller.pollNow(w)]);
    assert.deepEqual([x, y], ['ok', 'ok']);
  }
  assert.equal(peak, 1);
  assert.ok(served >= 4);
});

test('several hundred workers are polled within the concurrency cap', async (t) => {
  const WORKERS = 300;
  const CAP = 8;
  let current = 0;
  let peak = 0;
  const handler = (_req: IncomingMessage, res: ServerResponse) => {
    current += 1;
    peak = Math.max(peak, current);
    setTimeout(() => {
      current -= 1;
      res.end(JSON.stringify({ kvUsage: 0.5, running: 1, waiting: 0 }));
    }, 3);
  };
  const servers = await Promise.all(Array.from({ length: WORKERS }, () => server(t, handler)));
  const r = router(t, {
    workers: servers.map((s) => ({ url: s.url, engine: 'json' as const })),
    poller: { intervalSecs: 0.05, concurrency: CAP, timeoutMs: 5000 },
  });
  const polled = new Set<Worker>();
  const all = nextPoll(r, (w, res) => res === 'ok' && polled.add(w).size === WORKERS, 60_000);
  await r.start();
  await all;
  assert.ok(peak <= CAP, `servers saw ${peak} concurrent polls, cap ${CAP}`);
  assert.equal(peak, CAP, 'the cap is reached, so it is what limits');
  assert.ok(r.pool.list().every((w) => w.load?.kvUsage === 0.5));
});

test('addWorker after start is polled; removeWorker stops its polling and drops its state', async (t) => {
  const hits = { a: 0, b: 0 };
  const page = JSON.stringify({ running: 0, waiting: 0 });
  const a = await server(t, (_q, res) => (hits.a++, res.end(page)));
  const b = await server(t, (_q, res) => (hits.b++, res.end(page)));
  const r = router(t, { workers: [{ url: a.url, engine: 'json' }] });
  await r.start();
  const wb = r.addWorker({ url: b.url, engine: 'json' });
  await nextPoll(r, (x, res) => x === wb && res === 'ok');
  const wa = byUrl(r, a);
  r.removeWorker(wa.id);
  assert.equal(r.poller.has(wa), false);
  const afterRemoval = hits.a;
  let polled = 0;
  await nextPoll(r, (x) => x === wb && ++polled === 5);
  assert.equal(hits.a, afterRemoval, 'no request to a removed worker');
  assert.equal(await r.poller.pollNow(wa), undefined);
});

test('Authorization: Bearer <apiKey> when the worker has one, none otherwise', async (t) => {
  const seen: (string | undefined)[] = [];
  const s = await server(t, (req, res) => {
    seen.push(req.headers.authorization);
    res.end(fixture('llamacpp-metrics.txt'));
  });
  const r = router(t, {
    workers: [
      { url: s.url, engine: 'llamacpp', apiKey: 'sk-secret' },
      { url: `http://localhost:${s.port}`, engine: 'llamacpp' },
    ],
  });
  const [keyed, open] = r.pool.list();
  await r.poller.pollNow(keyed!);
  await r.poller.pollNow(open!);
  assert.deepEqual(seen, ['Bearer sk-secret', undefined]);
  assert.equal(keyed!.load?.kvUsage, undefined, 'llama.cpp KV usage is unknown, not 0');
});

test('auto: a worker serving only /health is detected as none and kept healthy', async (t) => {
  const s = await server(t, routes({ '/health': 'ok' }));
  const r = router(t, { workers: [s.url] });
  const w = byUrl(r, s);
  assert.equal(await r.poller.pollNow(w), 'ok');
  assert.equal(w.detectedEngine, 'none');
  assert.equal(w.load, undefined);
  assert.deepEqual(
    [r.workers()[0]?.engine, r.workers()[0]?.kvUsage, w.healthy, typeof w.lastPollAt],
    ['none', null, true, 'number'],
  );
});

test('stop(): no more polls, and the process can exit by itself', async (t) => {
  const held: ServerResponse[] = [];
  const s = await server(t, routes({ '/metrics': fixture('vllm-metrics-v1.txt') }));
  const silent = await server(t, (_req, res) => held.push(res));
  t.after(() => held.forEach((r) => r.destroy()));

  const child = spawn(
    process.execPath,
    ['--import', 'tsx', new URL('./exit-child.ts', import.meta.url).pathname, s.url, silent.url],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    child.on('exit', (c, sig) => resolve([c, sig])),
  );
  clearTimeout(guard);
  assert.equal(signal, null, `the child had to be killed: it did not exit after stop(); ${stderr}`);
  assert.equal(code, 0, stderr);
  assert.equal(stdout, 'stopped vllm\n');

  const r = router(t, { workers: [s.url] });
  let polls = 0;
  r.observe({ onPoll: () => (polls += 1) });
  await r.start();
  await nextPoll(r);
  await r.stop();
  const after = polls;
  await new Promise((resolve) => setTimeout(resolve, 10 * FAST.intervalSecs * 1000));
  assert.equal(polls, after, 'no poll after stop()');
  const again = nextPoll(r, (_w, res) => res === 'ok');
  await r.start();
  await again;
});
