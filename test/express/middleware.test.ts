import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import { test, type TestContext } from 'node:test';
import express from 'express';
import type { Worker } from '../../src/core/worker.js';
import { leastLoadRouter } from '../../src/express/middleware.js';
import type { Policy, RequestContext } from '../../src/policies/policy.js';
import { createRouter, type Router } from '../../src/router.js';
import {
  ReleaseLog,
  postJson,
  request,
  sha256,
  startApp,
  startWorker,
  totalInFlight,
  type TestWorker,
} from './helpers.js';

// engine 'none': these workers serve no load endpoint, so no poller may take them out of rotation.
const spec = (w: TestWorker) => ({ url: w.url, engine: 'none' as const });

test('least_load routing avoids a worker whose KV cache is nearly full', async (t) => {
  const full = await startWorker(t, 'full');
  const free = await startWorker(t, 'free');
  const router = createRouter({
    workers: [spec(full), spec(free)],
    policy: { name: 'least_load', mode: 'seed' },
  });
  const now = Date.now();
  (router.pool.get(`127.0.0.1:${full.port}`) as Worker).load = { at: now, kvUsage: 0.97 };
  (router.pool.get(`127.0.0.1:${free.port}`) as Worker).load = { at: now, kvUsage: 0.1 };
  const mw = leastLoadRouter({ router });
  const base = await startApp(t, (app) => app.use('/v1', mw));

  // Concurrent, so in-flight grows on `free`: still far below the barrier of a 97%-full cache.
  const replies = await Promise.all(
    Array.from({ length: 12 }, () => postJson(`${base}/v1/completions`, { prompt: 'hi' })),
  );
  for (const r of replies) assert.equal(r.json().worker, 'free');
  assert.equal(full.seen.length, 0);
  assert.equal(free.seen.length, 12);
  assert.equal(totalInFlight(router), 0);
});

test('round_robin through the middleware alternates workers', async (t) => {
  const a = await startWorker(t, 'a');
  const b = await startWorker(t, 'b');
  const mw = leastLoadRouter({ workers: [spec(a), spec(b)], policy: 'round_robin' });
  t.after(() => mw.close());
  const base = await startApp(t, (app) => app.use(mw));
  const names: string[] = [];
  for (let i = 0; i < 4; i++) names.push((await request(`${base}/x`)).json<{ worker: string }>().worker);
  assert.deepEqual(new Set(names.slice(0, 2)), new Set(['a', 'b']));
  assert.notEqual(names[0], names[1]);
  assert.equal(names[0], names[2]);
});

test('mounted under /v1 the worker receives the original path and query', async (t) => {
  const w = await startWorker(t, 'w');
  const mw = leastLoadRouter({ workers: [spec(w)] });
  t.after(() => mw.close());
  const base = await startApp(t, (app) => app.use('/v1', mw));
  const reply = await postJson(`${base}/v1/chat/completions?stream=false`, { model: 'm' });
  assert.equal(reply.status, 200);
  assert.equal(reply.json().url, '/v1/chat/completions?stream=false');
  assert.equal(reply.json<{ headers: { host: string } }>().headers.host, `127.0.0.1:${w.port}`);
});

test('pathRewrite rules and functions apply to the original path, once even across a retry', async (t) => {
  const w = await startWorker(t, 'w');
  const rules = leastLoadRouter({
    workers: [spec(w)],
    pathRewrite: { '^/v1': '/api/v1', '^/api': '/never' },
  });
  const fn = leastLoadRouter({
    workers: [spec(w)],
    pathRewrite: (path) => (path.startsWith('/gen') ? '/generate' : undefined),
  });
  t.after(() => rules.close());
  t.after(() => fn.close());
  const base = await startApp(t, (app) => {
    app.use('/v1', rules);
    app.use(fn);
  });
  assert.equal((await request(`${base}/v1/models`)).json().url, '/api/v1/models');
  assert.equal((await request(`${base}/gen`)).json().url, '/generate');
  assert.equal((await request(`${base}/health`)).json().url, '/health');
});

test('a worker URL with a base path is prefixed; the worker apiKey replaces the client authorization', async (t) => {
  const w = await startWorker(t, 'w');
  const mw = leastLoadRouter({ workers: [{ url: `${w.url}/base`, engine: 'none', apiKey: 'sk-worker' }] });
  t.after(() => mw.close());
  const base = await startApp(t, (app) => app.use('/v1', mw));
  const reply = await request(`${base}/v1/models`, { headers: { authorization: 'Bearer client' } });
  assert.equal(reply.json().url, '/base/v1/models');
  assert.equal(reply.json<{ headers: Record<string, string> }>().headers.authorization, 'Bearer sk-worker');
});

for (const [label, options, chunked] of [
  ['buffered for retry', {}, false],
  ['chunked, streamed', {}, true],
  ['over the retry limit, streamed', { retry: { maxBodyBytes: 1024 } }, false],
  ['retries off, streamed', { retry: { enabled: false } }, false],
] as const) {
  test(`a 5 MiB body is proxied intact (${label})`, async (t) => {
    const w = await startWorker(t, 'w');
    const mw = leastLoadRouter({ workers: [spec(w)], ...options });
    t.after(() => mw.close());
    const base = await startApp(t, (app) => app.use(mw));
    const body = randomBytes(5 * 1024 * 1024);
    const reply = await request(`${base}/upload`, {
      body,
      chunked,
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(reply.status, 200);
    assert.equal(reply.json().length, body.length);
    assert.equal(reply.json().sha256, sha256(body));
    assert.equal(totalInFlight(mw.router), 0);
  });
}

test('express.json() before the middleware: the parsed body is re-serialized with a correct length', async (t) => {
  const w = await startWorker(t, 'w');
  const mw = leastLoadRouter({ workers: [spec(w)] });
  t.after(() => mw.close());
  const base = await startApp(t, (app) => {
    app.use(express.json());
    app.use(express.urlencoded({ extended: false }));
    app.use('/v1', mw);
  });
  const payload = { model: 'llama', messages: [{ role: 'user', content: 'héllo ✓' }] };
  // Extra whitespace: what reaches the worker is the re-serialized form, with its own length.
  const sent = JSON.stringify(payload, null, 2);
  const reply = await request(`${base}/v1/chat/completions`, {
    body: sent,
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(reply.status, 200);
  const got = w.seen[0];
  assert.ok(got);
  assert.deepEqual(JSON.parse(got.body.toString('utf8')), payload);
  assert.equal(Number(got.headers['content-length']), got.body.length);

  const form = await request(`${base}/v1/form`, {
    body: 'a=1&b=two+words',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(form.status, 200);
  assert.equal(w.seen[1]?.body.toString(), 'a=1&b=two+words');

  // A GET that body parsers skip still goes through untouched.
  assert.equal((await request(`${base}/v1/models`)).json().method, 'GET');
});

for (const keepAlive of [true, false]) {
  test(`the client's keep-alive connection survives (upstream keepAlive ${keepAlive})`, async (t) => {
    const w = await startWorker(t, 'w');
    const mw = leastLoadRouter({ workers: [spec(w)], keepAlive });
    t.after(() => mw.close());
    const base = await startApp(t, (app) => app.use(mw));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    const reused: boolean[] = [];
    for (let i = 0; i < 2; i++) {
      const req = http.get(`${base}/v1/models`, { agent });
      const [res] = (await once(req, 'response')) as [http.IncomingMessage];
      res.resume();
      await once(res, 'end');
      assert.equal(res.headers.connection, 'keep-alive');
      reused.push(req.reusedSocket);
    }
    assert.deepEqual(reused, [false, true]);
    // Without upstream keep-alive http-proxy asks the worker to close; that stays between the two.
    assert.equal(w.seen[0]?.headers.connection, keepAlive ? 'keep-alive' : 'close');
  });
}

test('expect: 100-continue: the client gets its 100, the worker the body without the expectation', async (t) => {
  const w = await startWorker(t, 'w');
  const mw = leastLoadRouter({ workers: [spec(w)] });
  t.after(() => mw.close());
  const base = await startApp(t, (app) => app.use(mw));
  const body = JSON.stringify({ prompt: 'continue' });
  const req = http.request(`${base}/v1/completions`, {
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', 'content-length': body.length, expect: '100-continue' },
  });
  req.flushHeaders();
  await once(req, 'continue');
  req.end(body);
  const [res] = (await once(req, 'response')) as [http.IncomingMessage];
  res.resume();
  await once(res, 'end');
  assert.equal(res.statusCode, 200);
  assert.equal(w.seen[0]?.body.toString(), body);
  assert.equal(w.seen[0]?.headers.expect, undefined);
});

test('an upstream 5xx is passed through, counted as a failure, and reported to observers', async (t) => {
  const w = await startWorker(t, 'w', (_req, res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end('{"error":"boom"}');
  });
  const statuses: number[] = [];
  // A router nobody starts: no health poll may reset the failure count between the two requests.
  const router = createRouter({ workers: [spec(w)], poller: { unhealthyAfter: 2 } });
  const mw = leastLoadRouter({ router, observer: { onUpstreamResponse: (e) => statuses.push(e.status) } });
  t.after(() => mw.close());
  const log = new ReleaseLog(mw.router);
  const base = await startApp(t, (app) => app.use(mw));
  const reply = await request(`${base}/x`);
  assert.equal(reply.status, 500);
  assert.equal(reply.body.toString(), '{"error":"boom"}');
  await log.count(1);
  assert.deepEqual(
    log.outcomes.map((o) => o.outcome),
    ['failure'],
  );
  assert.deepEqual(statuses, [500]);
  const worker = mw.router.pool.list()[0] as Worker;
  assert.equal(worker.consecutiveFailures, 1);
  assert.equal(worker.healthy, true);
  await request(`${base}/x`);
  assert.equal(worker.healthy, false, 'two 5xx in a row reach unhealthyAfter');
});

test('no healthy worker: 503 JSON with the stable code and retry-after', async (t) => {
  const rejects: number[] = [];
  const mw = leastLoadRouter({
    poller: { intervalSecs: 2.5 },
    observer: { onReject: (e) => rejects.push(e.status) },
  });
  t.after(() => mw.close());
  const base = await startApp(t, (app) => app.use(mw));
  const reply = await postJson(`${base}/v1/completions`, { prompt: 'x' });
  assert.equal(reply.status, 503);
  assert.equal(reply.headers['retry-after'], '3');
  assert.match(String(reply.headers['content-type']), /^application\/json/);
  const body = reply.json<{ error: { code: string; message: string } }>();
  assert.equal(body.error.code, 'LLR_NO_HEALTHY_WORKER');
  assert.ok(body.error.message.length > 0);
  assert.deepEqual(rejects, [503]);
});

/**
 * Turns the router's policy into one that routes by model name and records what it saw. No built-in
 * policy reads the body yet and the router takes no custom policy, so the test patches the instance.
 */
function routeByModel(router: Router, byModel: Record<string, string>): RequestContext[] {
  const seen: RequestContext[] = [];
  const select: Policy['select'] = (candidates, ctx) => {
    seen.push(ctx);
    const id = ctx.model === undefined ? undefined : byModel[ctx.model];
    return candidates.find((w) => w.id === id) ?? candidates[0];
  };
  Object.assign(router.policy, { needsBody: true, select });
  return seen;
}

async function bodyAwareSetup(t: TestContext, withJsonParser: boolean) {
  const a = await startWorker(t, 'a');
  const b = await startWorker(t, 'b');
  const router = createRouter({ workers: [spec(a), spec(b)] });
  const seen = routeByModel(router, { 'model-a': `127.0.0.1:${a.port}`, 'model-b': `127.0.0.1:${b.port}` });
  const mw = leastLoadRouter({ router, maxBodyBytes: 64 * 1024 });
  const base = await startApp(t, (app) => {
    if (withJsonParser) app.use(express.json());
    app.use('/v1', mw);
  });
  return { a, b, router, seen, base };
}

for (const withJsonParser of [false, true]) {
  test(`body-aware routing reads model and prompt into the context${withJsonParser ? ' (after express.json())' : ''}`, async (t) => {
    const { b, seen, base } = await bodyAwareSetup(t, withJsonParser);
    const payload = {
      model: 'model-b',
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is KV?' },
            { type: 'image_url', image_url: {} },
          ],
        },
      ],
    };
    const reply = await postJson(`${base}/v1/chat/completions?x=1`, payload, { 'X-Tenant': 'Acme' });
    assert.equal(reply.status, 200);
    assert.equal(reply.json().worker, 'b');
    assert.deepEqual(
      JSON.parse(b.seen[0]?.body.toString() ?? ''),
      payload,
      'the body still reaches the worker',
    );
    const ctx = seen[0];
    assert.ok(ctx);
    assert.equal(ctx.model, 'model-b');
    assert.equal(ctx.prompt, 'Be brief.\nWhat is KV?');
    assert.equal(ctx.promptTokens, Math.ceil('Be brief.\nWhat is KV?'.length / 4));
    assert.equal(ctx.method, 'POST');
    assert.equal(ctx.path, '/v1/chat/completions?x=1');
    assert.equal(ctx.headers?.['x-tenant'], 'Acme');
    assert.match(String(ctx.authority), /^127\.0\.0\.1:\d+$/);

    const completion = await postJson(`${base}/v1/completions`, { model: 'model-a', prompt: 'abcdefgh' });
    assert.equal(completion.json().worker, 'a');
    assert.equal(seen[1]?.prompt, 'abcdefgh');
    assert.equal(seen[1]?.promptTokens, 2);
  });
}

test('body-aware routing: a body over maxBodyBytes gets a 413, declared or chunked, and no pick', async (t) => {
  const { router, seen, base } = await bodyAwareSetup(t, false);
  const big = JSON.stringify({ model: 'model-a', prompt: 'x'.repeat(100 * 1024) });
  for (const chunked of [false, true]) {
    const reply = await request(`${base}/v1/completions`, {
      body: big,
      chunked,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(reply.status, 413, chunked ? 'chunked' : 'content-length');
    assert.equal(reply.json<{ error: { code: string } }>().error.code, 'LLR_BODY_TOO_LARGE');
  }
  assert.equal(seen.length, 0);
  assert.equal(
    router.workers().reduce((n, w) => n + w.processed, 0),
    0,
  );
  // A body under the limit still routes.
  assert.equal((await postJson(`${base}/v1/completions`, { model: 'model-a', prompt: 'ok' })).status, 200);
});
