import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RouterMetrics } from '../../src/metrics/router-metrics.js';
import { createRouter } from '../../src/router.js';
import { startStatusServer } from '../../src/status/status-server.js';

async function setup(t: { after: (fn: () => Promise<void>) => void }) {
  const router = createRouter({ workers: ['http://10.0.0.1:8000', 'http://10.0.0.2:8000'] });
  const metrics = new RouterMetrics(router);
  const server = await startStatusServer(router, metrics, { port: 0, host: '127.0.0.1' });
  t.after(() => server.close());
  return { router, base: `http://127.0.0.1:${server.port}` };
}

test('/healthz, /readyz and /workers', async (t) => {
  const { router, base } = await setup(t);
  assert.equal((await fetch(`${base}/healthz`)).status, 200);
  const ready = await fetch(`${base}/readyz`);
  assert.equal(ready.status, 200);
  assert.deepEqual(await ready.json(), { ready: true, healthyWorkers: 2 });

  const [a] = router.pool.list();
  a!.load = { at: Date.now(), kvUsage: 0.5, running: 3, waiting: 1 };
  a!.lastPollAt = Date.parse('2026-01-02T03:04:05.000Z');
  const lease = router.pick();
  const body = (await (await fetch(`${base}/workers`)).json()) as {
    policy: string;
    workers: Record<string, unknown>[];
  };
  assert.equal(body.policy, 'least_load');
  const rec = body.workers.find((w) => w.id === a!.id)!;
  assert.equal(rec.kvUsage, 0.5);
  assert.equal(rec.running, 3);
  assert.equal(rec.waiting, 1);
  assert.equal(rec.lastPollAt, '2026-01-02T03:04:05.000Z');
  assert.equal(rec.inFlight, lease.worker === a ? 1 : 0);
  assert.equal(typeof rec.score, 'number');
  for (const key of [
    'id',
    'url',
    'engine',
    'healthy',
    'inFlight',
    'processed',
    'kvUsage',
    'running',
    'waiting',
    'lastPollAt',
    'score',
  ]) {
    assert.ok(key in rec, key);
  }

  for (const w of router.pool.list()) w.setHealthy(false);
  const notReady = await fetch(`${base}/readyz`);
  assert.equal(notReady.status, 503);
  assert.equal(((await notReady.json()) as { ready: boolean }).ready, false);
});

test('/metrics serves Prometheus text; unknown paths get a JSON 404', async (t) => {
  const { router, base } = await setup(t);
  router.pick().release();
  const res = await fetch(`${base}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
  assert.match(await res.text(), /^llr_requests_total\{worker="[^"]+",policy="least_load"\} 1$/m);
  const missing = await fetch(`${base}/nope`);
  assert.equal(missing.status, 404);
  assert.equal(((await missing.json()) as { error: { code: string } }).error.code, 'LLR_NOT_FOUND');
});
