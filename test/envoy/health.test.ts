import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import {
  Client,
  credentials,
  Metadata,
  status as GrpcStatus,
  type ServiceError,
  type MethodDefinition,
} from '@grpc/grpc-js';
import { createExtProcServer } from '../../src/envoy/ext-proc-server.js';
import type { HealthCheckRequest, HealthCheckResponse } from '../../src/envoy/messages.js';
import { EXT_PROC_SERVICE, loadProtos } from '../../src/envoy/proto-loader.js';
import { testRouter } from './fixture.js';

type HealthMethod = MethodDefinition<HealthCheckRequest, HealthCheckResponse>;

async function healthFixture(t: TestContext) {
  const router = testRouter({ workers: ['http://10.0.0.1:8000'] });
  const server = await createExtProcServer(router, { port: 0, host: '127.0.0.1', drainTimeoutMs: 2000 });
  const client = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure());
  t.after(async () => {
    client.close();
    await server.close();
  });
  const { health } = loadProtos();
  const checkM = health.Check as HealthMethod;
  const watchM = health.Watch as HealthMethod;
  const check = (service: string) =>
    new Promise<HealthCheckResponse>((resolve, reject) =>
      client.makeUnaryRequest(
        checkM.path,
        checkM.requestSerialize,
        checkM.responseDeserialize,
        { service },
        (err, res) => (err ? reject(err) : resolve(res!)),
      ),
    );
  const watch = (service: string) =>
    client.makeServerStreamRequest(
      watchM.path,
      watchM.requestSerialize,
      watchM.responseDeserialize,
      { service },
      new Metadata(),
    );
  return { server, check, watch, client, router };
}

test('Check: SERVING overall and for the ext_proc service; unknown service is NOT_FOUND', async (t) => {
  const { check } = await healthFixture(t);
  assert.deepEqual(await check(''), { status: 'SERVING' });
  assert.deepEqual(await check(EXT_PROC_SERVICE), { status: 'SERVING' });
  await assert.rejects(check('no.such.Service'), (err: ServiceError) => err.code === GrpcStatus.NOT_FOUND);
});

test('List names every service with its status', async (t) => {
  const { client } = await healthFixture(t);
  const list = loadProtos().health.List as MethodDefinition<
    object,
    { statuses: Record<string, HealthCheckResponse> }
  >;
  const res = await new Promise<{ statuses: Record<string, HealthCheckResponse> }>((resolve, reject) =>
    client.makeUnaryRequest(list.path, list.requestSerialize, list.responseDeserialize, {}, (err, r) =>
      err ? reject(err) : resolve(r!),
    ),
  );
  assert.deepEqual(Object.keys(res.statuses).sort(), ['', EXT_PROC_SERVICE, 'liveness', 'readiness']);
  for (const s of Object.values(res.statuses)) assert.equal(s.status, 'SERVING');
});

test('Watch: SERVING at once, NOT_SERVING when the server starts draining, then the stream ends', async (t) => {
  const { server, watch } = await healthFixture(t);
  const call = watch(EXT_PROC_SERVICE);
  const seen: string[] = [];
  const ended = new Promise<void>((resolve) => {
    call.on('data', (r: HealthCheckResponse) => {
      seen.push(r.status);
      if (seen.length === 1) void server.close();
    });
    call.on('status', () => resolve());
    call.on('error', () => undefined);
  });
  await ended;
  assert.deepEqual(seen, ['SERVING', 'NOT_SERVING']);
});

test('Watch of an unknown service says SERVICE_UNKNOWN and stays open', async (t) => {
  const { watch } = await healthFixture(t);
  const call = watch('no.such.Service');
  const first = await new Promise<HealthCheckResponse>((resolve) => call.once('data', resolve));
  assert.equal(first.status, 'SERVICE_UNKNOWN');
  assert.equal(call.destroyed, false);
  call.on('error', () => undefined);
  call.cancel();
});

test('readiness follows worker health (Inference Extension style); liveness and ext_proc stay SERVING', async (t) => {
  const { check, watch, router } = await healthFixture(t);
  assert.deepEqual(await check('readiness'), { status: 'SERVING' });
  const call = watch('readiness');
  call.on('error', () => undefined);
  const seen: string[] = [];
  let next: () => void = () => undefined;
  call.on('data', (r: HealthCheckResponse) => {
    seen.push(r.status);
    next();
  });
  const nth = (n: number) =>
    new Promise<void>((resolve) => {
      next = () => seen.length >= n && resolve();
      next();
    });
  await nth(1);
  const worker = router.pool.list()[0]!;
  router.setHealth(worker, false, 'test');
  assert.deepEqual(await check('readiness'), { status: 'NOT_SERVING' });
  assert.deepEqual(await check('liveness'), { status: 'SERVING' });
  assert.deepEqual(await check(EXT_PROC_SERVICE), { status: 'SERVING' }, 'still answers, with 503s');
  router.setHealth(worker, true, 'test');
  await nth(3);
  assert.deepEqual(seen, ['SERVING', 'NOT_SERVING', 'SERVING']);
  call.cancel();
});
