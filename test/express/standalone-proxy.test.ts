import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import { test } from 'node:test';
import { startProxyServer } from '../../src/express/standalone-proxy.js';
import { createRouter } from '../../src/router.js';
import { ReleaseLog, deferred, postJson, request, startWorker, totalInFlight } from './helpers.js';

test('the standalone proxy forwards with the original path and answers 503 JSON without workers', async (t) => {
  const w = await startWorker(t, 'w');
  const router = createRouter({ workers: [{ url: w.url, engine: 'none' }], host: '127.0.0.1' });
  const proxy = await startProxyServer(router, { port: 0 });
  t.after(() => proxy.close());
  assert.ok(proxy.port > 0);
  const base = `http://127.0.0.1:${proxy.port}`;

  const reply = await postJson(`${base}/v1/chat/completions?a=b`, { model: 'm', messages: [] });
  assert.equal(reply.status, 200);
  assert.equal(reply.json().url, '/v1/chat/completions?a=b');
  assert.equal(reply.headers['x-powered-by'], undefined);

  router.removeWorker(`127.0.0.1:${w.port}`);
  const none = await request(`${base}/v1/models`);
  assert.equal(none.status, 503);
  assert.equal(none.json<{ error: { code: string } }>().error.code, 'LLR_NO_HEALTHY_WORKER');
});

test('close() lets an in-flight stream finish within the grace period, then cuts it', async (t) => {
  const started = deferred();
  const w = await startWorker(t, 'w', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: first\n\n');
    started.resolve(); // and never ends
  });
  const router = createRouter({ workers: [{ url: w.url, engine: 'none' }] });
  const log = new ReleaseLog(router);
  const proxy = await startProxyServer(router, { port: 0, host: '127.0.0.1', shutdownGraceMs: 100 });

  const req = http.request(`http://127.0.0.1:${proxy.port}/v1/completions`, { agent: false });
  req.end();
  const [res] = (await once(req, 'response')) as [http.IncomingMessage];
  const ended = new Promise((resolve) => res.on('close', resolve));
  res.on('error', () => {}); // the cut surfaces as ECONNRESET here
  await started.promise;
  await proxy.close();
  await ended;
  assert.equal(res.complete, false, 'the stream was cut, not completed');
  await log.count(1);
  assert.equal(log.outcomes[0]?.outcome, 'cancelled');
  assert.equal(totalInFlight(router), 0);
  // A second close is harmless.
  await proxy.close();
});
