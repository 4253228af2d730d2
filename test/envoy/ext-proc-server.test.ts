import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createTcpServer, Socket, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { createExtProcServer } from '../../src/envoy/ext-proc-server.js';
import { headerValue } from '../../src/envoy/request-context.js';
import { EnvoyClient, rawHeaders } from './envoy-client.js';
import { envoyFlow } from './envoy-flow.js';
import { fixture, testRouter } from './fixture.js';

const DEST = 'x-gateway-destination-endpoint';
const CHAT = JSON.stringify({
  model: 'llama-3-8b',
  messages: [
    { role: 'system', content: 'You are terse.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Hello' },
        { type: 'image_url', image_url: { url: 'x' } },
      ],
    },
  ],
});

test('request_headers: header mutation (raw_value, OVERWRITE_IF_EXISTS_OR_ADD), clear_route_cache, envoy.lb metadata', async (t) => {
  const f = await fixture(t);
  const flow = await envoyFlow(f.client, {});
  const first = flow.responses[0]!;
  const common = first.request_headers?.response;
  assert.equal(common?.status ?? 'CONTINUE', 'CONTINUE');
  assert.equal(common?.clear_route_cache, true);
  const set = common?.header_mutation?.set_headers ?? [];
  assert.equal(set.length, 1);
  assert.equal(set[0]!.header.key, DEST);
  assert.equal(set[0]!.header.value, undefined, 'value must stay empty when raw_value is set');
  assert.ok(Buffer.isBuffer(set[0]!.header.raw_value));
  assert.equal(set[0]!.append_action, 'OVERWRITE_IF_EXISTS_OR_ADD');
  const endpoint = headerValue(set[0]!.header);
  assert.match(endpoint, /^127\.0\.0\.1:\d+$/);
  assert.deepEqual(flow.lbMetadata, { [DEST]: endpoint });
  assert.ok(f.workers.some((w) => w.id === endpoint));
  assert.equal((flow.upstream?.body as { servedBy: string }).servedBy, endpoint);
  assert.equal(flow.grpcStatus.code, GrpcStatus.OK);
  assert.deepEqual(f.inFlight(), [0, 0, 0]);
  assert.deepEqual(f.outcomes, ['success']);
});

test('least_load through Envoy avoids the worker whose KV cache is nearly full', async (t) => {
  const f = await fixture(t);
  const full = f.router.pool.get(f.workers[1]!.id)!;
  full.load = { at: Date.now(), kvUsage: 0.97 };
  const seen = new Set<string>();
  for (let i = 0; i < 30; i++) {
    const flow = await envoyFlow(f.client, { body: CHAT });
    seen.add(flow.destination!);
  }
  assert.equal(f.workers[1]!.hits, 0, 'the 97% KV worker got traffic');
  assert.equal(f.workers[0]!.hits + f.workers[2]!.hits, 30);
  assert.deepEqual([...seen].sort(), [f.workers[0]!.id, f.workers[2]!.id].sort());
  assert.deepEqual(f.inFlight(), [0, 0, 0]);
});

test("with the real load poller: KV usage read from the workers' /metrics steers Envoy traffic", async (t) => {
  const f = await fixture(t, { engine: 'vllm', config: { poller: { intervalSecs: 0.05, jitter: 0 } } });
  f.workers[2]!.kv = 0.97;
  f.workers[0]!.kv = 0.1;
  f.workers[1]!.kv = 0.2;
  const fresh = new Promise<void>((resolve) => {
    f.router.observe({
      onPoll: () => {
        if (f.router.pool.list().every((w) => w.load?.kvUsage !== undefined)) resolve();
      },
    });
  });
  await f.router.start();
  await fresh;
  assert.equal(f.router.pool.get(f.workers[2]!.id)!.load?.kvUsage, 0.97);
  for (let i = 0; i < 20; i++) await envoyFlow(f.client, { body: CHAT });
  assert.equal(f.workers[2]!.hits, 0, 'the worker at 97% KV got traffic');
  assert.equal(f.workers[0]!.hits + f.workers[1]!.hits, 20);
  assert.deepEqual(f.inFlight(), [0, 0, 0]);
});

test('a client-supplied destination header is overwritten and never reaches the policy', async (t) => {
  const f = await fixture(t, { record: { needsBody: false } });
  const policy = f.recorded!;
  const spoof = '169.254.169.254:80';
  const flow = await envoyFlow(f.client, { headers: { [DEST]: spoof, 'x-tenant': 'acme' } });
  const set = flow.responses[0]!.request_headers?.response?.header_mutation?.set_headers ?? [];
  assert.equal(set.length, 1);
  assert.equal(headerValue(set[0]!.header), f.workers[0]!.id);
  assert.equal(set[0]!.append_action, 'OVERWRITE_IF_EXISTS_OR_ADD');
  assert.equal(flow.destination, f.workers[0]!.id);
  assert.equal(f.workers[0]!.hits, 1);
  const ctx = policy.seen[0]!;
  assert.equal(ctx.headers?.[DEST], undefined);
  assert.equal(ctx.headers?.['x-tenant'], 'acme');
  assert.equal(ctx.method, 'GET');
  assert.equal(ctx.path, '/v1/chat/completions');
  assert.equal(ctx.authority, 'gateway.example');
});

test('no healthy worker: immediate_response 503 with JSON body and retry-after; no lease taken', async (t) => {
  const f = await fixture(t);
  for (const w of f.router.pool.list()) f.router.setHealth(w, false, 'test');
  const flow = await envoyFlow(f.client, { body: CHAT });
  const imm = flow.immediate!;
  assert.equal(imm.status.code, 'ServiceUnavailable');
  const headers = Object.fromEntries(
    (imm.headers?.set_headers ?? []).map((o) => [o.header.key, headerValue(o.header)]),
  );
  assert.equal(headers['content-type'], 'application/json');
  assert.equal(headers['retry-after'], '1');
  const body = JSON.parse(Buffer.from(imm.body!).toString('utf8')) as {
    error: { code: string; message: string };
  };
  assert.equal(body.error.code, 'LLR_NO_HEALTHY_WORKER');
  assert.ok(body.error.message.length > 0);
  assert.equal(imm.details, 'llr_no_healthy_worker');
  assert.equal(flow.destination, undefined);
  assert.deepEqual(f.inFlight(), [0, 0, 0]);
  assert.deepEqual(f.outcomes, []);
  assert.equal(
    f.workers.reduce((n, w) => n + w.hits, 0),
    0,
  );
});

test('an upstream 5xx in response_headers is a failure: outcome failure, passive health takes the worker out', async (t) => {
  const f = await fixture(t, {
    workers: 2,
    record: { needsBody: false },
    config: { poller: { unhealthyAfter: 3 } },
  });
  f.workers[0]!.status = 503;
  for (let i = 0; i < 3; i++) {
    const flow = await envoyFlow(f.client, {});
    assert.equal(flow.upstream?.status, 503);
    assert.equal(flow.destination, f.workers[0]!.id);
  }
  assert.deepEqual(f.outcomes, ['failure', 'failure', 'failure']);
  assert.equal(f.router.pool.get(f.workers[0]!.id)!.healthy, false);
  const flow = await envoyFlow(f.client, {});
  assert.equal(flow.destination, f.workers[1]!.id, 'traffic moved to the healthy worker');
  assert.equal(flow.upstream?.status, 200);
  assert.equal(f.outcomes.at(-1), 'success');
});

test('body-aware policy with request_body_mode BUFFERED: pick at the body, mutation in the BodyResponse', async (t) => {
  const f = await fixture(t, { record: { needsBody: true } });
  const policy = f.recorded!;
  const flow = await envoyFlow(f.client, { body: CHAT }, { bodyMode: 'BUFFERED' });
  const [headersRes, bodyRes] = flow.responses;
  assert.equal(headersRes!.response, 'request_headers');
  assert.equal(headersRes!.request_headers?.response?.header_mutation, undefined, 'no pick at headers');
  assert.equal(headersRes!.dynamic_metadata, undefined);
  const common = bodyRes!.request_body?.response;
  assert.equal(common?.clear_route_cache, true);
  assert.equal(headerValue(common!.header_mutation!.set_headers![0]!.header), f.workers[0]!.id);
  assert.deepEqual(flow.lbMetadata, { [DEST]: f.workers[0]!.id });
  assert.equal(flow.destination, f.workers[0]!.id);
  assert.equal(policy.seen.length, 1);
  assert.equal(policy.seen[0]!.model, 'llama-3-8b');
  assert.equal(policy.seen[0]!.prompt, 'You are terse.\nHello');
  assert.equal(policy.seen[0]!.path, '/v1/chat/completions');
  assert.deepEqual(f.inFlight(), [0, 0, 0]);
});

test('body-aware policy: a non-JSON body is still routed; a body-less request is picked at its headers', async (t) => {
  const f = await fixture(t, { record: { needsBody: true } });
  const policy = f.recorded!;
  const flow = await envoyFlow(f.client, { body: 'not json {', path: '/upload' }, { bodyMode: 'BUFFERED' });
  assert.equal(flow.destination, f.workers[0]!.id);
  assert.equal(flow.upstream?.status, 200);
  assert.equal(policy.seen[0]!.model, undefined);
  assert.equal(policy.seen[0]!.prompt, undefined);
  const get = await envoyFlow(f.client, { method: 'GET', path: '/v1/models' }, { bodyMode: 'BUFFERED' });
  assert.equal(get.responses[0]!.response, 'request_headers');
  assert.equal(get.destination, f.workers[0]!.id);
  assert.ok(get.responses[0]!.request_headers?.response?.header_mutation);
  assert.equal(policy.seen.length, 2);
});

test('body-aware policy: protocol_config request_body_mode NONE (Envoy 1.33+) means pick at the headers', async (t) => {
  // Envoy's shipped proto predates protocol_config, so this client speaks ours.
  const f = await fixture(t, { record: { needsBody: true }, client: 'ours' });
  const call = f.client.open();
  const res = await call.exchange({
    request_headers: { headers: { headers: rawHeaders({ ':method': 'POST', ':path': '/v1/completions' }) } },
    protocol_config: { request_body_mode: 'NONE' },
  });
  assert.equal(
    headerValue(res.request_headers!.response!.header_mutation!.set_headers![0]!.header),
    f.workers[0]!.id,
  );
  await call.end();
});

test('every message kind gets the matching response type; observability_mode gets none', async (t) => {
  const f = await fixture(t);
  const call = f.client.open();
  const kinds = [
    [
      'request_headers',
      { request_headers: { headers: { headers: rawHeaders({ ':method': 'POST', ':path': '/' }) } } },
    ],
    ['request_body', { request_body: { body: Buffer.from('{}'), end_of_stream: false } }],
    ['request_trailers', { request_trailers: { trailers: { headers: rawHeaders({ 'x-t': '1' }) } } }],
    ['response_headers', { response_headers: { headers: { headers: rawHeaders({ ':status': '200' }) } } }],
    ['response_body', { response_body: { body: Buffer.from('data: {}\n\n'), end_of_stream: true } }],
    [
      'response_trailers',
      { response_trailers: { trailers: { headers: rawHeaders({ 'grpc-status': '0' }) } } },
    ],
  ] as const;
  for (const [kind, msg] of kinds) {
    const res = await call.exchange(msg);
    assert.equal(res.response, kind);
  }
  // An observing filter's messages get no answer; the next answer is to the next real message.
  call.send({ observability_mode: true, response_body: { body: Buffer.from('x') } });
  const res = await call.exchange({ response_trailers: {} });
  assert.equal(res.response, 'response_trailers');
  assert.equal((await call.end()).code, GrpcStatus.OK);

  const watcher = f.client.open();
  watcher.send({
    observability_mode: true,
    request_headers: {
      headers: { headers: rawHeaders({ ':method': 'GET', ':path': '/' }) },
      end_of_stream: true,
    },
  });
  const after = await watcher.exchange({ request_trailers: {} });
  assert.equal(after.response, 'request_trailers');
  assert.deepEqual(f.inFlight(), [0, 0, 0], 'observability mode takes no lease');
  await watcher.end();
});

test('fallbacks: the header and metadata carry the pick then N fallbacks', async (t) => {
  const f = await fixture(t, { server: { fallbacks: 2 } });
  f.router.pool.get(f.workers[2]!.id)!.load = { at: Date.now(), kvUsage: 0.9 };
  const flow = await envoyFlow(f.client, {});
  const list = flow.destination!.split(',');
  assert.equal(list.length, 3);
  assert.equal(new Set(list).size, 3);
  assert.equal(list[2], f.workers[2]!.id, 'the loaded worker is the last fallback');
  assert.equal((flow.upstream?.body as { servedBy: string }).servedBy, list[0]);
  assert.deepEqual(flow.lbMetadata, { [DEST]: flow.destination });
});

test('a configurable destination header name is used in the mutation and the metadata', async (t) => {
  const f = await fixture(t, { server: { destinationHeader: 'x-llm-endpoint' } });
  const flow = await envoyFlow(f.client, {}, { destinationHeader: 'x-llm-endpoint' });
  assert.ok(flow.destination);
  assert.deepEqual(flow.lbMetadata, { 'x-llm-endpoint': flow.destination });
});

test('the lease lives as long as the stream: through response headers, until half-close or cancel or deadline', async (t) => {
  const f = await fixture(t, { workers: 1 });
  const headers = {
    request_headers: {
      headers: { headers: rawHeaders({ ':method': 'GET', ':path': '/' }) },
      end_of_stream: true,
    },
  };

  const a = f.client.open();
  await a.exchange(headers);
  assert.deepEqual(f.inFlight(), [1]);
  await a.exchange({ response_headers: { headers: { headers: rawHeaders({ ':status': '200' }) } } });
  assert.deepEqual(f.inFlight(), [1], 'streaming generation still counts');
  await a.end();
  assert.deepEqual(f.inFlight(), [0]);

  const b = f.client.open();
  await b.exchange(headers);
  const done = new Promise<void>((resolve) => f.router.observe({ onRelease: () => resolve() }));
  b.cancel();
  await done;
  assert.deepEqual(f.inFlight(), [0]);

  const c = f.client.open({ deadline: Date.now() + 150 });
  await c.exchange(headers);
  const expired = new Promise<void>((resolve) => f.router.observe({ onRelease: () => resolve() }));
  assert.equal((await c.status).code, GrpcStatus.DEADLINE_EXCEEDED);
  await expired;
  assert.deepEqual(f.inFlight(), [0]);
  assert.deepEqual(f.outcomes, ['success', 'cancelled', 'cancelled']);
});

test('a dropped Envoy connection releases every lease on it', async (t) => {
  const f = await fixture(t, { workers: 2 });
  // A TCP relay between client and server, so the test can cut the connection under open streams.
  const sockets = new Set<Socket>();
  const relay = createTcpServer((down) => {
    const up = new Socket();
    up.connect(f.server.port, '127.0.0.1');
    down.pipe(up).pipe(down);
    sockets.add(down).add(up);
    const drop = () => {
      down.destroy();
      up.destroy();
    };
    down.on('error', drop);
    up.on('error', drop);
  });
  relay.listen(0, '127.0.0.1');
  await once(relay, 'listening');
  t.after(() => relay.close());
  const client = new EnvoyClient((relay.address() as AddressInfo).port);
  t.after(() => client.close());

  const calls = Array.from({ length: 20 }, () => client.open());
  for (const call of calls) {
    await call.exchange({
      request_headers: {
        headers: { headers: rawHeaders({ ':method': 'GET', ':path': '/' }) },
        end_of_stream: true,
      },
    });
  }
  assert.equal(
    f.inFlight().reduce((a, b) => a + b, 0),
    20,
  );
  let releases = 0;
  const allReleased = new Promise<void>((resolve) =>
    f.router.observe({ onRelease: () => ++releases === 20 && resolve() }),
  );
  for (const s of sockets) s.destroy();
  await allReleased;
  assert.deepEqual(f.inFlight(), [0, 0]);
  await Promise.all(calls.map((c) => c.status));
});

test('many concurrent streams on one HTTP/2 connection are all routed and released', async (t) => {
  const f = await fixture(t, { workers: 4 });
  const flows = await Promise.all(
    Array.from({ length: 400 }, (_, i) =>
      envoyFlow(f.client, { body: CHAT, path: `/v1/chat/completions?i=${i}` }),
    ),
  );
  for (const flow of flows) {
    assert.equal(flow.grpcStatus.code, GrpcStatus.OK);
    assert.equal((flow.upstream?.body as { servedBy: string }).servedBy, flow.destination);
  }
  for (const w of f.workers) assert.ok(w.hits > 40, `${w.id} got ${w.hits} of 400`);
  assert.deepEqual(f.inFlight(), [0, 0, 0, 0]);
  assert.equal(f.outcomes.length, 400);
});

test('close() drains: health goes NOT_SERVING, open streams finish, then close resolves', async (t) => {
  const f = await fixture(t, { workers: 1 });
  const call = f.client.open();
  await call.exchange({
    request_headers: {
      headers: { headers: rawHeaders({ ':method': 'GET', ':path': '/' }) },
      end_of_stream: true,
    },
  });
  let closed = false;
  const closing = f.server.close().then(() => (closed = true));
  // The open stream still gets answers while the server drains.
  const res = await call.exchange({
    response_headers: { headers: { headers: rawHeaders({ ':status': '200' }) } },
  });
  assert.equal(res.response, 'response_headers');
  assert.equal(closed, false);
  assert.deepEqual(f.inFlight(), [1]);
  await call.end();
  await closing;
  assert.deepEqual(f.inFlight(), [0]);
  assert.deepEqual(f.outcomes, ['success']);
});

test('close() ends streams that outlive drainTimeoutMs cleanly (status OK) and releases their leases', async (t) => {
  const f = await fixture(t, { workers: 1, server: { drainTimeoutMs: 100 } });
  const call = f.client.open();
  await call.exchange({
    request_headers: {
      headers: { headers: rawHeaders({ ':method': 'GET', ':path': '/' }) },
      end_of_stream: true,
    },
  });
  assert.deepEqual(f.inFlight(), [1]);
  const started = Date.now();
  await f.server.close();
  assert.ok(Date.now() - started >= 90, 'waited for the drain budget');
  assert.deepEqual(f.inFlight(), [0]);
  assert.deepEqual(f.outcomes, ['cancelled']);
  // A clean close: a fail-closed Envoy carries on with the request rather than resetting it.
  assert.equal((await call.status).code, GrpcStatus.OK);
  assert.equal(f.server.activeStreams, 0);
});

test('options are validated like the config file; a taken port is LLR_EXT_PROC_LISTEN', async (t) => {
  const router = testRouter({ workers: ['http://127.0.0.1:1'] });
  await assert.rejects(createExtProcServer(router, { fallbacks: -1 }), {
    code: 'LLR_CONFIG',
    field: 'envoy.fallbacks',
  });
  await assert.rejects(createExtProcServer(router, { destinationHeader: 'X Bad' }), {
    code: 'LLR_CONFIG',
    field: 'envoy.destinationHeader',
  });
  await assert.rejects(createExtProcServer(router, { drainTimeoutMs: -5 }), {
    code: 'LLR_CONFIG',
    field: 'drainTimeoutMs',
  });
  const first = await createExtProcServer(router, { port: 0, host: '127.0.0.1' });
  t.after(() => first.close());
  await assert.rejects(createExtProcServer(router, { port: first.port, host: '127.0.0.1' }), {
    code: 'LLR_EXT_PROC_LISTEN',
  });
});

test('with fallbacks, a 5xx is charged to the endpoint Envoy reports as served, not the first pick', async (t) => {
  const f = await fixture(t, { workers: 2, server: { fallbacks: 1 } });
  const call = f.client.open();
  const res = await call.exchange({
    request_headers: {
      headers: { headers: rawHeaders({ ':method': 'GET', ':path': '/' }) },
      end_of_stream: true,
    },
  });
  const [first, fallback] = headerValue(
    res.request_headers!.response!.header_mutation!.set_headers![0]!.header,
  ).split(',');
  await call.exchange({
    response_headers: { headers: { headers: rawHeaders({ ':status': '502' }) } },
    metadata_context: {
      filter_metadata: { 'envoy.lb': { fields: { [`${DEST}-served`]: { stringValue: fallback! } } } },
    },
  });
  await call.end();
  assert.equal(f.router.pool.get(fallback!)!.consecutiveFailures, 1);
  assert.equal(f.router.pool.get(first!)!.consecutiveFailures, 0);
  assert.deepEqual(f.outcomes, ['failure']);
});

test('the real prefix_hash policy behind request_body_mode BUFFERED keeps a conversation on one worker', async (t) => {
  const f = await fixture(t, { workers: 4, config: { policy: 'prefix_hash' } });
  assert.equal(f.router.policy.needsBody, true);
  const convo = (i: number, system: string) =>
    JSON.stringify({
      model: 'm',
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: `question ${i}` },
      ],
    });
  const systemA = 'You answer in French. '.repeat(20);
  const first = await envoyFlow(f.client, { body: convo(0, systemA) }, { bodyMode: 'BUFFERED' });
  for (let i = 1; i < 8; i++) {
    const flow = await envoyFlow(f.client, { body: convo(i, systemA) }, { bodyMode: 'BUFFERED' });
    assert.equal(flow.destination, first.destination, `turn ${i} moved`);
    assert.equal(flow.responses[0]!.request_headers?.response?.header_mutation, undefined);
  }
  const others = new Set<string>();
  for (let i = 0; i < 12; i++) {
    const flow = await envoyFlow(
      f.client,
      { body: convo(0, `System prompt number ${i}. `.repeat(20)) },
      { bodyMode: 'BUFFERED' },
    );
    others.add(flow.destination!);
  }
  assert.ok(others.size > 1, 'different prefixes spread over workers');
  assert.deepEqual(f.inFlight(), [0, 0, 0, 0]);
});
