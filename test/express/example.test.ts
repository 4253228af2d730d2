import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createApp } from '../../examples/express/app.js';
import { deadUrl, postJson, request, startApp, startWorker } from './helpers.js';

test('the Express example: /v1 and /sglang share one router; /metrics and /workers answer', async (t) => {
  const a = await startWorker(t, 'a');
  // round_robin so the dead worker is met exactly once, deterministically.
  const example = createApp([a.url, await deadUrl()], 'round_robin');
  t.after(() => example.close());
  const base = await startApp(t, (app) => app.use(example.app));

  // Every request succeeds: whichever one meets the dead worker is retried on `a`.
  for (let i = 0; i < 3; i++) {
    const chat = await postJson(`${base}/v1/chat/completions`, { model: 'm', messages: [] });
    assert.equal(chat.status, 200);
    assert.equal(chat.json().url, '/v1/chat/completions');
  }
  const native = await postJson(`${base}/sglang/generate`, { text: 'hi' });
  assert.equal(native.json().url, '/generate');
  assert.equal(
    example.router.workers().find((w) => w.url === a.url)?.processed,
    4,
    'both routes count on the same router',
  );

  const metrics = await request(`${base}/metrics`);
  assert.equal(metrics.status, 200);
  assert.match(
    metrics.body.toString(),
    /example_upstream_errors_total\{worker="127\.0\.0\.1:\d+",phase="request"\} 1/,
  );
  const workers = (await request(`${base}/workers`)).json<{ url: string; healthy: boolean }[]>();
  assert.deepEqual(
    workers.map((w) => w.healthy),
    [true, false],
  );
});
