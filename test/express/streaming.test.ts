import assert from 'node:assert/strict';
import { once } from 'node:events';
import http, { type IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { leastLoadRouter } from '../../src/express/middleware.js';
import { ReleaseLog, deferred, startApp, startWorker, totalInFlight } from './helpers.js';

/** Opens a streaming completion request and resolves with the response (headers received). */
async function open(url: string): Promise<{ req: http.ClientRequest; res: IncomingMessage }> {
  const body = JSON.stringify({ model: 'm', prompt: 'hi', stream: true });
  const req = http.request(url, {
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  req.end(body);
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  return { req, res };
}

async function readRest(res: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of res) text += String(chunk);
  return text;
}

for (const [label, contentType, first, rest] of [
  ['SSE', 'text/event-stream', 'data: {"token":"first"}\n\n', 'data: {"token":"second"}\n\ndata: [DONE]\n\n'],
  ['chunked', 'text/plain', 'first line\n', 'second line\n'],
] as const) {
  test(`${label}: the first chunk reaches the client before the worker finishes`, async (t) => {
    const finish = deferred();
    const w = await startWorker(t, 'w', async (_req, res) => {
      res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache' });
      res.write(first);
      await finish.promise;
      res.end(rest);
    });
    const mw = leastLoadRouter({ workers: [{ url: w.url, engine: 'none' }] });
    t.after(() => mw.close());
    const log = new ReleaseLog(mw.router);
    const base = await startApp(t, (app) => app.use('/v1', mw));

    const { res } = await open(`${base}/v1/completions`);
    assert.equal(res.headers['content-type'], contentType);
    const [chunk] = (await once(res, 'data')) as [Buffer];
    // The worker is still blocked on `finish`: this chunk cannot have waited for the end.
    assert.equal(chunk.toString(), first);
    assert.equal(totalInFlight(mw.router), 1, 'the lease is held while the stream is open');
    finish.resolve();
    assert.equal(await readRest(res), rest);
    await log.count(1);
    assert.deepEqual(log.outcomes, [{ worker: `127.0.0.1:${w.port}`, outcome: 'success' }]);
    assert.equal(totalInFlight(mw.router), 0);
  });
}

test('a client that disconnects mid-stream aborts the upstream request and releases the lease', async (t) => {
  const upstreamClosed = deferred<boolean>();
  const w = await startWorker(t, 'w', (_req, res) => {
    res.on('close', () => upstreamClosed.resolve(res.writableFinished));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"token":"first"}\n\n');
    // ...and keeps "generating" forever unless someone stops it.
  });
  const mw = leastLoadRouter({ workers: [{ url: w.url, engine: 'none' }] });
  t.after(() => mw.close());
  const log = new ReleaseLog(mw.router);
  const base = await startApp(t, (app) => app.use('/v1', mw));

  const { req, res } = await open(`${base}/v1/chat/completions`);
  await once(res, 'data');
  req.destroy();
  assert.equal(await upstreamClosed.promise, false, 'the worker saw its response closed before it finished');
  await log.count(1);
  assert.equal(log.outcomes[0]?.outcome, 'cancelled');
  assert.equal(totalInFlight(mw.router), 0);
});

test('a client that disconnects before any response byte (during prefill) aborts the upstream too', async (t) => {
  const received = deferred();
  const upstreamClosed = deferred<boolean>();
  const w = await startWorker(t, 'w', (_req, res) => {
    res.on('close', () => upstreamClosed.resolve(res.writableFinished));
    received.resolve(); // never answers
  });
  const mw = leastLoadRouter({ workers: [{ url: w.url, engine: 'none' }] });
  t.after(() => mw.close());
  const log = new ReleaseLog(mw.router);
  const base = await startApp(t, (app) => app.use('/v1', mw));

  const body = JSON.stringify({ prompt: 'long prompt' });
  const req = http.request(`${base}/v1/completions`, {
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', 'content-length': body.length },
  });
  req.on('error', () => {}); // we hang up ourselves
  req.end(body);
  await received.promise;
  assert.equal(totalInFlight(mw.router), 1);
  req.destroy();
  assert.equal(await upstreamClosed.promise, false);
  await log.count(1);
  assert.equal(log.outcomes[0]?.outcome, 'cancelled');
  assert.equal(totalInFlight(mw.router), 0);
});
