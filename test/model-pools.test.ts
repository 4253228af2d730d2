import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createExtProcServer } from '../src/envoy/ext-proc-server.js';
import { leastLoadRouter } from '../src/express/middleware.js';
import { createRouter } from '../src/router.js';
import { EnvoyClient } from './envoy/envoy-client.js';
import { envoyFlow } from './envoy/envoy-flow.js';
import { startWorkers } from './envoy/workers.js';
import { postJson, startApp, startWorker } from './express/helpers.js';

test('model-aware pools: a model is routed only among its workers; unknown models are refused', () => {
  const router = createRouter({
    workers: [
      { url: 'http://10.0.0.1:8000', models: ['llama'] },
      { url: 'http://10.0.0.2:8000', models: ['llama', 'qwen'] },
      { url: 'http://10.0.0.3:8000', models: ['qwen'] },
    ],
  });
  assert.equal(router.needsBody, true, 'routing by model needs the body');
  for (let i = 0; i < 30; i++) {
    assert.notEqual(router.pick({ model: 'llama' }).worker.id, '10.0.0.3:8000');
    assert.notEqual(router.pick({ model: 'qwen' }).worker.id, '10.0.0.1:8000');
  }
  assert.throws(() => router.pick({ model: 'mistral' }), { code: 'LLR_UNKNOWN_MODEL' });
  router.setHealth(router.pool.get('10.0.0.3:8000')!, false, 'test');
  router.setHealth(router.pool.get('10.0.0.2:8000')!, false, 'test');
  assert.throws(
    () => router.pick({ model: 'qwen' }),
    { code: 'LLR_NO_HEALTHY_WORKER' },
    'known but down is a 503',
  );
  assert.equal(router.pick({ model: 'llama' }).worker.id, '10.0.0.1:8000');
  assert.equal(
    router.pick({}).worker.id,
    '10.0.0.1:8000',
    'a request without a model may go anywhere healthy',
  );
});

test('workers without a model list serve every model; pools without models do not need the body', () => {
  const plain = createRouter({ workers: ['http://10.0.0.1:8000'] });
  assert.equal(plain.needsBody, false);
  assert.equal(plain.pick({ model: 'anything' }).worker.id, '10.0.0.1:8000');
  const mixed = createRouter({
    workers: [{ url: 'http://10.0.0.1:8000', models: ['llama'] }, 'http://10.0.0.2:8000'],
  });
  assert.equal(mixed.pick({ model: 'mistral' }).worker.id, '10.0.0.2:8000');
});

test('Express: the body decides the pool; an unknown model gets a 404 JSON error', async (t) => {
  const llama = await startWorker(t, 'llama');
  const qwen = await startWorker(t, 'qwen');
  const mw = leastLoadRouter({
    workers: [
      { url: llama.url, engine: 'none', models: ['llama'] },
      { url: qwen.url, engine: 'none', models: ['qwen'] },
    ],
  });
  t.after(() => mw.close());
  const base = await startApp(t, (app) => app.use(mw));
  for (const model of ['qwen', 'llama', 'qwen']) {
    const reply = await postJson(`${base}/v1/chat/completions`, {
      model,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(reply.status, 200);
    assert.equal((JSON.parse(reply.body.toString()) as { worker: string }).worker, model);
  }
  const unknown = await postJson(`${base}/v1/chat/completions`, { model: 'mistral', messages: [] });
  assert.equal(unknown.status, 404);
  assert.equal(
    (JSON.parse(unknown.body.toString()) as { error: { code: string } }).error.code,
    'LLR_UNKNOWN_MODEL',
  );
});

test('Envoy: with a buffered body the model picks the pool; an unknown model gets immediate_response 404', async (t) => {
  const [a, b] = await startWorkers(2);
  const router = createRouter({
    workers: [
      { url: a!.url, engine: 'none', models: ['llama'] },
      { url: b!.url, engine: 'none', models: ['qwen'] },
    ],
  });
  const server = await createExtProcServer(router, { port: 0, host: '127.0.0.1' });
  const client = new EnvoyClient(server.port);
  t.after(async () => {
    client.close();
    await server.close();
    await Promise.all([a!.close(), b!.close()]);
  });
  const body = (model: string) => JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] });
  const qwen = await envoyFlow(client, { body: body('qwen') }, { bodyMode: 'BUFFERED' });
  assert.equal(qwen.destination, b!.id);
  const llama = await envoyFlow(client, { body: body('llama') }, { bodyMode: 'BUFFERED' });
  assert.equal(llama.destination, a!.id);
  const unknown = await envoyFlow(client, { body: body('mistral') }, { bodyMode: 'BUFFERED' });
  assert.equal(unknown.destination, undefined);
  assert.equal(unknown.immediate?.status.code, 'NotFound');
  assert.deepEqual(
    router.pool.list().map((w) => w.inFlight),
    [0, 0],
  );
});

test('a model can have its own policy; other models use the default one', () => {
  const router = createRouter({
    workers: ['http://10.0.0.1:8000', 'http://10.0.0.2:8000', 'http://10.0.0.3:8000'],
    policy: { name: 'least_load', mode: 'seed' },
    models: { 'chat-rr': { policy: 'round_robin' } },
  });
  assert.equal(router.needsBody, true);
  const picked: string[] = [];
  router.observe({ onPick: (_lease, policy) => picked.push(policy) });
  const rr = Array.from({ length: 6 }, () => router.pick({ model: 'chat-rr' }).worker.id);
  assert.equal(new Set(rr).size, 3, 'round robin visits every worker although in-flight grows');
  assert.deepEqual(rr.slice(0, 3), rr.slice(3), 'in order');
  router.pick({ model: 'other' });
  assert.deepEqual(picked.slice(-2), ['round_robin', 'least_load'], 'metrics label the policy that picked');
  assert.throws(() => createRouter({ models: { m: { policy: 'fastest' } } }), {
    code: 'LLR_CONFIG',
    message: /^models\.m\.policy\.name: unknown policy/,
  });
});
