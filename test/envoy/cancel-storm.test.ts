import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng, type Rng } from '../../src/core/random.js';
import { createExtProcServer } from '../../src/envoy/ext-proc-server.js';
import type { Router } from '../../src/router.js';
import { EnvoyClient, rawHeaders, type ExtProcCall } from './envoy-client.js';
import { recordPicks, testRouter } from './fixture.js';

const WORKERS = [
  'http://10.0.0.1:8000',
  'http://10.0.0.2:8000',
  'http://10.0.0.3:8000',
  'http://10.0.0.4:8000',
];

const requestHeaders = (endOfStream: boolean) => ({
  request_headers: {
    headers: {
      headers: rawHeaders({
        ':method': 'POST',
        ':path': '/v1/completions',
        ':authority': 'gw',
        ':scheme': 'http',
      }),
    },
    end_of_stream: endOfStream,
  },
});
const responseHeaders = { response_headers: { headers: { headers: rawHeaders({ ':status': '200' }) } } };
const requestBody = {
  request_body: { body: Buffer.from('{"model":"m","prompt":"p"}'), end_of_stream: true },
};

/**
 * One stream, abandoned at a random point: before anything, racing the pick, after it, after the
 * response headers, by deadline, or closed cleanly. Resolves when the client has the final status.
 */
async function oneStream(client: EnvoyClient, rng: Rng, withBody: boolean): Promise<void> {
  const point = Math.floor(rng() * 9);
  const call: ExtProcCall =
    point === 7 ? client.open({ deadline: Date.now() + 1 + Math.floor(rng() * 20) }) : client.open();
  const quiet = () => undefined;
  // grpc-js's client can lose a cancel() issued in the same tick as the call starts (the HTTP/2
  // stream opens afterwards and is never reset), so cancels wait one macrotask: Envoy always
  // resets what it opened, and that reset is what the server must handle.
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  try {
    if (point === 0) return void (await tick(), call.cancel());
    call.send(requestHeaders(!withBody));
    if (point === 1) return void (await tick(), call.cancel());
    if (point === 6) return void call.stream.end();
    await call.next();
    if (withBody) {
      if (point === 2) return call.cancel();
      await call.exchange(requestBody);
    }
    if (point === 2 || point === 7) return point === 2 ? call.cancel() : undefined;
    call.send(responseHeaders);
    if (point === 3) return call.cancel();
    await call.next();
    if (point === 4) return call.cancel();
    if (point === 8) return void call.stream.end();
    await call.end();
  } catch {
    // A deadline or cancel racing our own reads; the status below is what we wait for.
  } finally {
    await call.status.then(quiet, quiet);
  }
}

/** Resolves once `done()` holds, checking after every macrotask; rejects after `ms`. */
async function until(done: () => boolean, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function storm(router: Router, total: number, concurrency: number, seed: number, withBody: boolean) {
  let picks = 0;
  let releases = 0;
  router.observe({ onPick: () => void picks++, onRelease: () => void releases++ });
  const server = await createExtProcServer(router, { port: 0, host: '127.0.0.1' });
  // One client, one HTTP/2 connection, `concurrency` streams on it at any time.
  const client = new EnvoyClient(server.port);
  const rng = seededRng(seed);
  let launched = 0;
  const lane = async () => {
    while (launched < total) {
      launched += 1;
      await oneStream(client, rng, withBody);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  // The client has every final status; the server may still be reading the last resets.
  await until(
    () => server.activeStreams === 0,
    10_000,
    () => `${server.activeStreams} streams open, ${picks} picks, ${releases} releases`,
  );
  client.close();
  await server.close();
  return { picks, releases };
}

function assertAllReleased(router: Router, picks: number, releases: number, total: number) {
  assert.ok(picks > total / 3, `only ${picks} picks in ${total} streams: the storm did not exercise leases`);
  assert.equal(releases, picks, 'every lease released exactly once');
  for (const w of router.workers()) assert.equal(w.inFlight, 0, `${w.id} in-flight`);
  assert.equal(
    router.workers().reduce((n, w) => n + w.processed, 0),
    picks,
  );
}

test('10,000 streams cancelled at random points (64 at a time on one connection) leave in-flight at 0', async () => {
  const router = testRouter({ workers: WORKERS });
  const { picks, releases } = await storm(router, 10_000, 64, 20240601, false);
  assertAllReleased(router, picks, releases, 10_000);
});

test('the same with a body-aware policy: picks deferred to request_body, cancels before and after', async () => {
  const router = testRouter({ workers: WORKERS });
  recordPicks(router, true);
  const { picks, releases } = await storm(router, 2_000, 32, 7, true);
  assertAllReleased(router, picks, releases, 2_000);
});
