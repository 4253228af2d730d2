import assert from 'node:assert/strict';
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { Worker } from '../../src/core/worker.js';
import { leastLoadRouter } from '../../src/express/middleware.js';
import type { UpstreamErrorEvent } from '../../src/express/observer.js';
import {
  ReleaseLog,
  deadUrl,
  deferred,
  echo,
  postJson,
  request,
  startApp,
  startWorker,
  totalInFlight,
} from './helpers.js';

const none = (url: string) => ({ url, engine: 'none' as const });

test('connection refused: the worker leaves rotation and the request is retried on another', async (t) => {
  const dead = await deadUrl();
  const live = await startWorker(t, 'live');
  const errors: UpstreamErrorEvent[] = [];
  const mw = leastLoadRouter({
    workers: [none(dead), none(live.url)],
    policy: 'round_robin',
    observer: { onUpstreamError: (e) => errors.push(e) },
  });
  t.after(() => mw.close());
  const log = new ReleaseLog(mw.router);
  const base = await startApp(t, (app) => app.use('/v1', mw));

  for (let i = 0; i < 4; i++) {
    const reply = await postJson(`${base}/v1/completions`, { prompt: `p${i}` });
    assert.equal(reply.status, 200);
    assert.equal(reply.json().worker, 'live');
    assert.equal(
      JSON.parse(live.seen[i]?.body.toString() ?? '').prompt,
      `p${i}`,
      'the replayed body is intact',
    );
  }
  assert.equal(errors.length, 1);
  assert.equal(errors[0]?.phase, 'request');
  assert.equal(errors[0]?.retried, true);
  assert.equal(errors[0]?.worker.url, dead);
  const deadWorker = mw.router.pool.list().find((w) => w.url === dead) as Worker;
  assert.equal(deadWorker.healthy, false);
  await log.count(5);
  assert.deepEqual(log.outcomes.map((o) => o.outcome).sort(), [
    'failure',
    'success',
    'success',
    'success',
    'success',
  ]);
  assert.equal(totalInFlight(mw.router), 0);
});

test('a worker killed mid-run: its requests are retried elsewhere and all succeed, nothing stuck', async (t) => {
  const N = 10;
  const allArrived = deferred();
  const killed = deferred();
  let arrived = 0;
  const arrive = () => {
    if (++arrived === N) allArrived.resolve();
  };
  // Both hold their answers until `a` is gone, so all N requests are in flight when it dies.
  const a = await startWorker(t, 'a', () => arrive());
  const b = await startWorker(t, 'b', async (req, res, body) => {
    if (arrived < N) arrive();
    await killed.promise;
    echo('b')(req, res, body);
  });
  const mw = leastLoadRouter({ workers: [none(a.url), none(b.url)] });
  t.after(() => mw.close());
  const log = new ReleaseLog(mw.router);
  const base = await startApp(t, (app) => app.use('/v1', mw));

  const replies = Array.from({ length: N }, (_, i) =>
    postJson(`${base}/v1/completions`, { prompt: `p${i}` }),
  );
  await allArrived.promise;
  const onA = a.seen.length;
  assert.ok(onA > 0 && onA < N, `least_load spread the burst (${onA} on a)`);
  await a.kill();
  killed.resolve();

  const done = await Promise.all(replies);
  for (const r of done) assert.equal(r.status, 200);
  assert.equal(b.seen.length, N);
  assert.deepEqual(
    b.seen.map((s) => JSON.parse(s.body.toString()).prompt).sort(),
    Array.from({ length: N }, (_, i) => `p${i}`).sort(),
  );
  await log.count(N + onA);
  assert.equal(log.outcomes.filter((o) => o.outcome === 'failure').length, onA);
  assert.equal(log.outcomes.filter((o) => o.outcome === 'success').length, N);
  assert.equal(totalInFlight(mw.router), 0);
  assert.equal(mw.router.pool.list().find((w) => w.url === a.url)?.healthy, false);
  assert.equal((await request(`${base}/v1/models`)).json().worker, 'b');
});

test('every worker down: the request that finds out gets 503, and so does the next', async (t) => {
  const mw = leastLoadRouter({ workers: [none(await deadUrl()), none(await deadUrl())] });
  t.after(() => mw.close());
  const base = await startApp(t, (app) => app.use(mw));
  for (let i = 0; i < 2; i++) {
    const reply = await postJson(`${base}/v1/completions`, { prompt: 'x' });
    assert.equal(reply.status, 503);
    assert.equal(reply.json<{ error: { code: string } }>().error.code, 'LLR_NO_HEALTHY_WORKER');
    assert.equal(reply.headers['retry-after'], '1');
  }
  assert.equal(totalInFlight(mw.router), 0);
});

test('retries off: a refused connection is a 502 JSON error, not replayed', async (t) => {
  const dead = await deadUrl();
  const live = await startWorker(t, 'live');
  const mw = leastLoadRouter({
    workers: [none(dead), none(live.url)],
    policy: 'round_robin',
    retry: { enabled: false },
  });
  t.after(() => mw.close());
  const base = await startApp(t, (app) => app.use(mw));
  const statuses = [];
  for (let i = 0; i < 2; i++) statuses.push((await postJson(`${base}/x`, { i })).status);
  assert.deepEqual([...statuses].sort(), [200, 502]);
  assert.equal(live.seen.length, 1);
  const reply = await postJson(`${base}/x`, { i: 2 });
  assert.equal(reply.status, 200, 'the dead worker is out of rotation');
});

test('nothing is retried after the first response byte: the client sees the stream cut', async (t) => {
  const a = await startWorker(t, 'a', (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: partial\n\n', () => req.socket.destroy());
  });
  const b = await startWorker(t, 'b');
  const errors: UpstreamErrorEvent[] = [];
  const mw = leastLoadRouter({
    workers: [none(a.url), none(b.url)],
    policy: 'round_robin',
    observer: { onUpstreamError: (e) => errors.push(e) },
  });
  t.after(() => mw.close());
  const log = new ReleaseLog(mw.router);
  const base = await startApp(t, (app) => app.use(mw));
  const results = await Promise.allSettled([request(`${base}/one`), request(`${base}/two`)]);
  assert.equal(
    results.filter((r) => r.status === 'rejected').length,
    1,
    'the cut stream fails on the client',
  );
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  assert.equal(b.seen.length, 1, 'the cut request was not replayed on b');
  assert.equal(errors.length, 1);
  assert.equal(errors[0]?.phase, 'response');
  assert.equal(errors[0]?.retried, false);
  await log.count(2);
  assert.deepEqual(log.outcomes.map((o) => o.outcome).sort(), ['failure', 'success']);
  assert.equal(totalInFlight(mw.router), 0);
});

test('proxyTimeoutMs: a worker that never answers gets a 504, is aborted, and stays healthy', async (t) => {
  const upstreamClosed = deferred();
  const w = await startWorker(t, 'w', (_req, res) => {
    res.on('close', () => upstreamClosed.resolve());
  });
  const mw = leastLoadRouter({ workers: [none(w.url)], timeouts: { proxyTimeoutMs: 150 } });
  t.after(() => mw.close());
  const log = new ReleaseLog(mw.router);
  const base = await startApp(t, (app) => app.use(mw));
  const reply = await postJson(`${base}/x`, {});
  assert.equal(reply.status, 504);
  assert.equal(reply.json<{ error: { code: string } }>().error.code, 'LLR_UPSTREAM_TIMEOUT');
  await upstreamClosed.promise;
  await log.count(1);
  assert.equal(log.outcomes[0]?.outcome, 'failure');
  assert.equal(mw.router.pool.list()[0]?.healthy, true);
  assert.equal(w.seen.length, 1, 'a timeout is not a connection failure: no retry');
});

test('idleTimeoutMs: a stream that stalls is cut; one that keeps talking is not', async (t) => {
  const w = await startWorker(t, 'w', (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (req.url === '/stall') {
      res.write('data: one\n\n');
      return;
    }
    // Ticks well inside the idle limit, for longer than the limit in total.
    let n = 0;
    const timer = setInterval(() => {
      if (++n < 6) res.write(`data: ${n}\n\n`);
      else {
        clearInterval(timer);
        res.end('data: [DONE]\n\n');
      }
    }, 40);
  });
  const mw = leastLoadRouter({ workers: [none(w.url)], timeouts: { idleTimeoutMs: 120 } });
  t.after(() => mw.close());
  const log = new ReleaseLog(mw.router);
  const base = await startApp(t, (app) => app.use(mw));
  const alive = await request(`${base}/talk`);
  assert.match(alive.body.toString(), /\[DONE\]/);
  await assert.rejects(request(`${base}/stall`));
  await log.count(2);
  assert.deepEqual(
    log.outcomes.map((o) => o.outcome),
    ['success', 'failure'],
  );
  assert.equal(totalInFlight(mw.router), 0);
});

test('a pooled keep-alive socket the worker closed is retried without marking the worker down', async (t) => {
  // A worker that answers the first request on each connection, keep-alive, and resets the second:
  // exactly the race of reusing a socket the server is closing.
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let requests = 0;
    socket.on('data', () => {
      if (++requests === 1) {
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');
      } else {
        socket.destroy();
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const errors: UpstreamErrorEvent[] = [];
  const mw = leastLoadRouter({
    workers: [none(url)],
    poller: { intervalSecs: 600 },
    observer: { onUpstreamError: (e) => errors.push(e) },
  });
  t.after(() => mw.close());
  const base = await startApp(t, (app) => app.use(mw));

  assert.equal((await request(`${base}/first`)).status, 200);
  assert.equal((await request(`${base}/second`)).status, 200, 'retried on a fresh connection');
  assert.equal(errors.length, 1);
  assert.equal(errors[0]?.retried, true);
  const worker = mw.router.pool.list()[0] as Worker;
  assert.equal(worker.healthy, true);
  assert.equal(worker.consecutiveFailures, 0);
});
