import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import express from 'express';
import { RouterMetrics } from '../../src/metrics/router-metrics.js';
import { createRouter } from '../../src/router.js';
import { metricsHandler, statusHandler } from '../../src/status/express-handlers.js';

test('statusHandler and metricsHandler mount on a user Express app', async (t) => {
  const router = createRouter({ workers: ['http://10.0.0.1:8000'] });
  const metrics = new RouterMetrics(router);
  const app = express();
  app.use('/ops', statusHandler(router, metrics));
  app.get('/prom', metricsHandler(metrics));
  app.get('/ops/mine', (_req, res) => {
    res.send('user route');
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  t.after(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  router.pick().release();
  const workers = (await (await fetch(`${base}/ops/workers`)).json()) as { workers: { processed: number }[] };
  assert.equal(workers.workers[0]?.processed, 1);
  assert.equal((await fetch(`${base}/ops/readyz`)).status, 200);
  assert.equal(await (await fetch(`${base}/ops/mine`)).text(), 'user route', 'other paths pass through');
  assert.match(
    await (await fetch(`${base}/prom`)).text(),
    /llr_requests_total\{worker="10.0.0.1:8000",policy="least_load"\} 1/,
  );
});

test('logRouterEvents logs state changes, not requests, at info level', async () => {
  const { logRouterEvents } = await import('../../src/logging/router-logging.js');
  const router = createRouter({ workers: ['http://10.0.0.1:8000'] });
  const lines: string[] = [];
  const logger = {
    debug: () => lines.push('debug'),
    info: (_o: object, m: string) => lines.push(m),
    warn: (_o: object, m: string) => lines.push(m),
    error: (_o: object, m: string) => lines.push(m),
  };
  logRouterEvents(router, logger);
  router.addWorker('http://10.0.0.2:8000');
  for (let i = 0; i < 5; i++) router.pick().release();
  router.setHealth(router.pool.get('10.0.0.2:8000')!, false, 'test');
  router.removeWorker('10.0.0.2:8000');
  assert.deepEqual(
    lines.filter((l) => l !== 'debug'),
    ['worker added', 'worker unhealthy', 'worker removed'],
  );
});
