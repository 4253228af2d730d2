import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { validateConfig } from '../src/config/validate.js';
import { Gateway } from '../src/gateway.js';
import { startSimServer } from '../src/sim/sim-server.js';

test('shutdown drains an in-flight streaming request through the proxy, then stops', async (t) => {
  // 40 tokens at ~25 ms a step: the stream lasts about a second.
  const worker = await startSimServer(
    { name: 'w', decodeStepBaseMs: 25, decodePerSeqMs: 0 },
    { host: '127.0.0.1' },
  );
  t.after(() => worker.close());
  const gateway = new Gateway(
    validateConfig({ workers: [worker.url], host: '127.0.0.1', poller: { intervalSecs: 0.2 } }),
  );
  await gateway.start();
  const proxy = await gateway.startProxy(0);

  const chunks: string[] = [];
  let gotFirst!: () => void;
  const firstChunk = new Promise<void>((r) => (gotFirst = r));
  const finished = new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: proxy.port,
        method: 'POST',
        path: '/v1/completions',
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          chunks.push(d);
          gotFirst();
        });
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'm', prompt: 'hello world', max_tokens: 40, stream: true }));
  });
  await firstChunk;
  assert.equal(gateway.router.inFlight(), 1);

  const drained = await gateway.shutdown(10_000);
  assert.equal(drained, true, 'shutdown waited for the stream');
  assert.equal(await finished, 200);
  assert.match(chunks.join(''), /data: \[DONE\]/, 'the stream completed, not cut');
  assert.equal(gateway.router.inFlight(), 0);
  await assert.rejects(
    fetch(`http://127.0.0.1:${proxy.port}/v1/completions`),
    'no new connections after shutdown',
  );
});

test('shutdown gives up at the deadline and still stops everything', async (t) => {
  const worker = await startSimServer(
    { name: 'w', decodeStepBaseMs: 200, decodePerSeqMs: 0 },
    { host: '127.0.0.1' },
  );
  t.after(() => worker.close());
  const gateway = new Gateway(validateConfig({ workers: [worker.url], host: '127.0.0.1' }));
  await gateway.start();
  const proxy = await gateway.startProxy(0);
  const pending = fetch(`http://127.0.0.1:${proxy.port}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'x', max_tokens: 500, stream: true }),
  })
    .then((r) => r.text())
    .catch(() => 'cut');
  while (gateway.router.inFlight() === 0) await new Promise((r) => setTimeout(r, 10));
  const started = Date.now();
  assert.equal(await gateway.shutdown(300), false);
  assert.ok(Date.now() - started < 5000);
  await pending;
});
