import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startProxyServer } from '../../src/express/standalone-proxy.js';
import { Gateway } from '../../src/gateway.js';
import type { Logger } from '../../src/logging/logger.js';
import { RouterMetrics } from '../../src/metrics/router-metrics.js';
import { validateConfig } from '../../src/config/validate.js';
import type { Router } from '../../src/router.js';
import { startRedis, type RedisProcess } from './redis-server.js';
import {
  eventually,
  fleetCounts,
  spread,
  startHeldWorkers,
  startReplicas,
  sync,
  view,
} from './replica-helpers.js';

const CHILD = fileURLToPath(new URL('./replica-child.ts', import.meta.url));

let redis: RedisProcess;
before(async () => {
  redis = await startRedis();
});
after(() => redis.stop());

/** One series' value in Prometheus text, or undefined when absent. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function captureLogger(): Logger & { lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (_obj: object, msg: string) => void lines.push({ level, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const ownCounts = (router: Router): number[] => router.pool.list().map((w) => w.ownInFlight);
const remoteCounts = (router: Router): number[] => router.pool.list().map((w) => w.remoteInFlight);

test('a burst sent round-robin over three replicas spreads as it does over one router', async (t) => {
  const workers = await startHeldWorkers(t, 4);
  const shared = await startReplicas(t, 3, { redisUrl: redis.url, workers, keyPrefix: 'burst:' });
  const alone = await startReplicas(t, 3, { redisUrl: undefined, workers });
  const [one] = await startReplicas(t, 1, { redisUrl: undefined, workers });
  let worst = { shared: 0, alone: 0, one: 0 };
  for (let i = 0; i < 120; i++) {
    shared[i % 3]!.pick();
    alone[i % 3]!.pick();
    one!.pick();
    await sync(shared);
    const fleet = fleetCounts(shared);
    for (const r of shared) assert.deepEqual(view(r), fleet, `every replica sees the fleet after pick ${i}`);
    worst = {
      shared: Math.max(worst.shared, spread(fleet)),
      alone: Math.max(worst.alone, spread(fleetCounts(alone))),
      one: Math.max(worst.one, spread(view(one!))),
    };
  }
  assert.equal(worst.one, 1);
  assert.equal(worst.shared, worst.one, 'shared replicas never herd more than one router');
  assert.ok(worst.alone >= 2, `replicas that share nothing herd (spread ${worst.alone})`);
  assert.deepEqual(fleetCounts(shared), [30, 30, 30, 30]);
  assert.equal(shared[0]!.sharedState!.replicas, 3);
});

test('picks made with no time to sync are counted fleet-wide after one refresh; releases too', async (t) => {
  const workers = await startHeldWorkers(t, 4);
  const replicas = await startReplicas(t, 3, { redisUrl: redis.url, workers, keyPrefix: 'sync:' });
  const leases = replicas.map(() => [] as ReturnType<Router['pick']>[]);
  for (let i = 0; i < 120; i++) leases[i % 3]!.push(replicas[i % 3]!.pick());
  for (const r of replicas) assert.deepEqual(ownCounts(r), [10, 10, 10, 10]);
  await sync(replicas);
  for (const r of replicas) {
    assert.deepEqual(view(r), [30, 30, 30, 30]);
    assert.deepEqual(remoteCounts(r), [20, 20, 20, 20]);
  }
  for (const lease of leases[0]!) lease.release();
  assert.deepEqual(view(replicas[0]!), [20, 20, 20, 20], 'the own part moves at once');
  await sync(replicas);
  for (const r of replicas) assert.deepEqual(view(r), [20, 20, 20, 20]);
  assert.equal(replicas[1]!.inFlight(), 40, 'router.inFlight() counts only its own requests');
});

test('two replicas behind real proxies spread real requests over real workers', async (t) => {
  const workers = await startHeldWorkers(t, 4);
  const replicas = await startReplicas(t, 2, { redisUrl: redis.url, workers, keyPrefix: 'proxy:' });
  const proxies = await Promise.all(replicas.map((r) => startProxyServer(r, { port: 0, host: '127.0.0.1' })));
  t.after(() => Promise.all(proxies.map((p) => p.close())));
  const agent = new http.Agent({ keepAlive: false });
  t.after(() => agent.destroy());
  const replies: Promise<number>[] = [];
  const held = () => workers.map((w) => w.held);
  for (let i = 0; i < 16; i++) {
    replies.push(
      new Promise((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port: proxies[i % 2]!.port, method: 'POST', path: '/v1/completions', agent },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ model: 'm', prompt: `request ${i}` }));
      }),
    );
    await eventually(`request ${i} to reach a worker`, () => held().reduce((a, b) => a + b, 0) === i + 1);
    await sync(replicas);
    assert.ok(spread(held()) <= 1, `after request ${i} the workers hold ${held().join(',')}`);
  }
  assert.deepEqual(held(), [4, 4, 4, 4]);
  for (const w of workers) w.releaseAll();
  assert.deepEqual(await Promise.all(replies), Array(16).fill(200));
  await eventually('every lease released', () => replicas.every((r) => r.inFlight() === 0));
  await sync(replicas);
  for (const r of replicas) assert.deepEqual(view(r), [0, 0, 0, 0]);
});

test("a crashed replica's share expires after the TTL; a restart starts clean", async (t) => {
  const workers = await startHeldWorkers(t, 4);
  const [a] = await startReplicas(t, 1, {
    redisUrl: redis.url,
    workers,
    keyPrefix: 'crash:',
    heartbeatTtlSecs: 2,
  });
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', CHILD, redis.url, 'crash:', '2', '8', ...workers.map((w) => w.url)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const [line] = (await once(child.stdout, 'data')) as [Buffer];
  const { replica: crashedId } = JSON.parse(line.toString()) as { replica: string };
  await a!.sharedState!.refresh();
  assert.deepEqual(view(a!), [2, 2, 2, 2], "the other process's leases count here");
  assert.equal(a!.sharedState!.replicas, 2);

  child.kill('SIGKILL');
  await once(child, 'exit');
  await a!.sharedState!.refresh();
  assert.deepEqual(view(a!), [2, 2, 2, 2], 'a crash leaves no goodbye: the share lives until its TTL');
  await eventually(
    'the crashed share to expire',
    () => view(a!).every((n) => n === 0),
    6000,
    () => a!.sharedState!.refresh(),
  );
  assert.equal(a!.sharedState!.replicas, 1);

  const [b] = await startReplicas(t, 1, { redisUrl: redis.url, workers, keyPrefix: 'crash:' });
  assert.notEqual(b!.sharedState!.replicaId, crashedId);
  assert.notEqual(b!.sharedState!.replicaId, a!.sharedState!.replicaId);
  b!.pick();
  await sync([a!, b!]);
  assert.deepEqual(fleetCounts([a!, b!]), view(a!));
  assert.equal(
    view(a!).reduce((x, y) => x + y, 0),
    1,
    'the restarted replica counts only its new lease',
  );
});

test('a replica that stops cleanly takes its share with it at once, and counts never go negative', async (t) => {
  const workers = await startHeldWorkers(t, 4);
  const [a, b] = await startReplicas(t, 2, {
    redisUrl: redis.url,
    workers,
    keyPrefix: 'leave:',
    heartbeatTtlSecs: 60,
  });
  for (let i = 0; i < 4; i++) b!.pick();
  await sync([a!, b!]);
  assert.deepEqual(view(a!), [1, 1, 1, 1]);
  await b!.stop();
  await a!.sharedState!.refresh();
  assert.deepEqual(view(a!), [0, 0, 0, 0], 'no TTL wait after a clean stop');
  assert.equal(a!.sharedState!.replicas, 1);

  // A replica whose hash holds garbage (a negative count) and one that stopped heartbeating long ago.
  const client = new Redis(redis.url);
  t.after(() => client.quit());
  const [secs] = await client.time();
  const now = Number(secs) * 1000;
  await client.zadd('leave:replicas', now, 'ghost', now - 600_000, 'stale');
  await client.hset('leave:inflight:ghost', workers[0]!.id, '-5', workers[1]!.id, '3');
  await client.hset('leave:inflight:stale', workers[2]!.id, '7');
  a!.pick();
  await a!.sharedState!.refresh();
  const own = ownCounts(a!);
  assert.deepEqual(view(a!), [own[0]!, own[1]! + 3, own[2]!, own[3]!]);
  assert.ok(
    a!.pool.list().every((w) => w.inFlight >= 0 && w.remoteInFlight >= 0),
    'negative counts clamp at 0',
  );
});

test('Redis down: routing goes on, degraded gauge 1, logged once; Redis back: gauge 0, counts shared', async (t) => {
  const own = await startRedis();
  t.after(() => own.stop());
  const workers = await startHeldWorkers(t, 4);
  const logger = captureLogger();
  const [a, b] = await startReplicas(t, 2, {
    redisUrl: own.url,
    workers,
    heartbeatTtlSecs: 1,
    options: (i) => (i === 0 ? { logger } : {}),
  });
  const metrics = new RouterMetrics(a!);
  t.after(() => metrics.close());
  for (let i = 0; i < 4; i++) b!.pick();
  await sync([a!, b!]);
  assert.deepEqual(view(a!), [1, 1, 1, 1]);
  let text = await metrics.text();
  assert.equal(value(text, 'llr_shared_state_degraded'), 0);
  assert.equal(value(text, 'llr_shared_state_errors_total{op="connection"}'), 0);

  await own.stop();
  const leases = Array.from({ length: 8 }, () => a!.pick());
  assert.equal(leases.length, 8, 'every pick succeeds with Redis gone');
  assert.deepEqual(ownCounts(a!), [2, 2, 2, 2]);
  await eventually('the degraded state', () => a!.sharedState!.degraded);
  const errors = async () =>
    value(await metrics.text(), 'llr_shared_state_errors_total{op="connection"}') ?? 0;
  await eventually('a few reconnect attempts', async () => (await errors()) >= 3);
  text = await metrics.text();
  assert.equal(value(text, 'llr_shared_state_degraded'), 1);
  assert.deepEqual(
    logger.lines.filter((l) => l.level === 'warn').map((l) => l.msg),
    ["shared state unavailable: routing on this replica's own view until Redis is back"],
    'logged once, not per failure',
  );
  await eventually('the others’ share to decay after the TTL', () => remoteCounts(a!).every((n) => n === 0));
  assert.deepEqual(view(a!), [2, 2, 2, 2], 'routing on the exact local view');
  for (const lease of leases.slice(0, 4)) lease.release();
  a!.pick().release();

  await own.restart();
  await eventually('both replicas to rejoin', () => !a!.sharedState!.degraded && !b!.sharedState!.degraded);
  await sync([a!, b!]);
  assert.deepEqual(view(a!), fleetCounts([a!, b!]), "b's leases are shared again after the restart");
  assert.deepEqual(view(b!), fleetCounts([a!, b!]), "and a's");
  assert.equal(
    view(b!).reduce((x, y) => x + y, 0),
    8,
  );
  text = await metrics.text();
  assert.equal(value(text, 'llr_shared_state_degraded'), 0);
  assert.deepEqual(logger.lines.filter((l) => l.msg === 'shared state rejoined').length, 1);
});

test('Redis down at start: start() still resolves, and the replica joins once Redis is up', async (t) => {
  const own = await startRedis();
  t.after(() => own.stop());
  await own.stop();
  const workers = await startHeldWorkers(t, 2);
  const [a] = await startReplicas(t, 1, { redisUrl: own.url, workers });
  assert.equal(a!.sharedState!.degraded, true);
  a!.pick();
  await own.restart();
  const [b] = await startReplicas(t, 1, { redisUrl: own.url, workers });
  assert.equal(b!.sharedState!.degraded, false);
  await eventually('the first replica to join', () => !a!.sharedState!.degraded);
  await sync([a!, b!]);
  assert.deepEqual(view(b!), fleetCounts([a!, b!]), 'the lease taken while Redis was down is shared now');
});

test('a hung Redis (SIGSTOP) never holds up a pick; it rejoins when Redis answers again', async (t) => {
  const own = await startRedis();
  t.after(() => own.stop());
  const workers = await startHeldWorkers(t, 2);
  const [a, b] = await startReplicas(t, 2, { redisUrl: own.url, workers, heartbeatTtlSecs: 5 });
  b!.pick();
  await sync([a!, b!]);
  own.pause();
  let picked = 0;
  for (let i = 0; i < 1000; i++) {
    a!.pick().release();
    picked += 1;
  }
  assert.equal(picked, 1000, 'picks never wait for Redis');
  const held = a!.pick();
  assert.equal(held.worker.ownInFlight, 1);
  held.release();
  await eventually('the command timeout to mark the state degraded', () => a!.sharedState!.degraded);
  own.resume();
  await eventually('the replica to rejoin', () => !a!.sharedState!.degraded);
  await sync([a!, b!]);
  assert.deepEqual(view(a!), fleetCounts([a!, b!]));
});

test('the gateway joins the shared state on start and leaves it on shutdown', async (t) => {
  const workers = await startHeldWorkers(t, 2);
  const logger = captureLogger();
  const config = validateConfig({
    workers: workers.map((w) => ({ url: w.url, engine: 'none' })),
    host: '127.0.0.1',
    state: { redis: { url: redis.url, keyPrefix: 'gw:' } },
  });
  const gateway = new Gateway(config, { logger });
  t.after(() => gateway.shutdown(0));
  await gateway.start();
  assert.ok(logger.lines.some((l) => l.msg === 'shared in-flight state started'));
  const client = new Redis(redis.url);
  t.after(() => client.quit());
  const id = gateway.router.sharedState!.replicaId;
  assert.deepEqual(await client.zrange('gw:replicas', 0, -1), [id]);
  gateway.router.pick();
  await gateway.router.sharedState!.flush();
  const written = Object.values(await client.hgetall(`gw:inflight:${id}`)).map(Number);
  assert.deepEqual(written, [1], 'the lease is in Redis');
  await gateway.shutdown(0);
  assert.deepEqual(await client.zrange('gw:replicas', 0, -1), []);
  assert.equal(await client.exists(`gw:inflight:${id}`), 0);
});
