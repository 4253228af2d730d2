import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../src/core/random.js';
import { validateConfig } from '../src/config/validate.js';
import { createRouter } from '../src/router.js';

const urls = (n: number) => Array.from({ length: n }, (_, i) => `http://10.0.0.${i + 1}:8000`);

test('pick counts in-flight and processed at once; release gives in-flight back', () => {
  const router = createRouter({ workers: urls(2) }, { rng: seededRng(1) });
  const a = router.pick();
  const b = router.pick();
  assert.notEqual(a.worker.id, b.worker.id, 'the second pick sees the first');
  a.release();
  a.release();
  b.release();
  for (const w of router.workers()) {
    assert.equal(w.inFlight, 0);
    assert.equal(w.processed, 1);
  }
});

test('the single-worker path counts processed too', () => {
  const router = createRouter({ workers: urls(1) });
  for (let i = 0; i < 3; i++) router.pick().release();
  assert.equal(router.workers()[0]?.processed, 3);
});

test('no healthy worker throws LLR_NO_HEALTHY_WORKER', () => {
  const empty = createRouter({});
  assert.throws(() => empty.pick(), { code: 'LLR_NO_HEALTHY_WORKER' });
  const router = createRouter({ workers: urls(2) });
  for (const w of router.pool.list()) w.setHealthy(false);
  assert.throws(() => router.pick(), { code: 'LLR_NO_HEALTHY_WORKER' });
});

test('least_load: a burst of N picks with no completions spreads evenly', () => {
  for (const policy of ['least_load', 'round_robin'] as const) {
    const router = createRouter({ workers: urls(8), policy }, { rng: seededRng(3) });
    for (let i = 0; i < 800; i++) router.pick();
    for (const w of router.workers()) assert.equal(w.inFlight, 100, `${policy} ${w.id}`);
  }
});

test('removing a worker drains it: no new picks, in-flight finish, then all state is pruned', () => {
  const router = createRouter({ workers: urls(3) });
  const removed: string[] = [];
  const policy = router.policy as { onRemove?: (id: string) => void };
  policy.onRemove = (id) => removed.push(id);
  const lease = router.pick();
  const id = lease.worker.id;
  router.removeWorker(id);
  assert.equal(router.workers().find((w) => w.id === id)?.draining, true, 'still listed while draining');
  assert.deepEqual(removed, [], 'policy state kept until the drain ends');
  for (let i = 0; i < 50; i++) router.pick().release();
  assert.equal(lease.worker.processed, 1, 'a draining worker takes no new picks');
  lease.release();
  assert.deepEqual(removed, [id]);
  assert.equal(router.workers().length, 2);
  assert.equal(lease.worker.inFlight, 0);
  assert.throws(() => router.removeWorker('nope:1'), { code: 'LLR_UNKNOWN_WORKER' });
  const idle = router.pool.list()[0]!;
  router.removeWorker(idle.id);
  assert.equal(router.pool.has(idle.id), false, 'an idle worker leaves at once');
});

test('reconfigure: reconciles config workers only, rebuilds policy, reports restart-only keys', () => {
  const router = createRouter({ workers: urls(2), policy: { name: 'least_load', mode: 'seed', lambda: 1 } });
  router.addWorker('http://10.9.0.1:8000'); // added by the API: a reload must not drop it
  const next = validateConfig({
    workers: ['http://10.0.0.2:8000', 'http://10.0.0.7:8000'],
    policy: { name: 'least_load', mode: 'seed', lambda: 4 },
    metrics: { port: 9191 },
  });
  const result = router.reconfigure(next);
  assert.deepEqual(result.added, ['10.0.0.7:8000']);
  assert.deepEqual(result.removed, ['10.0.0.1:8000']);
  assert.equal(result.policy, true);
  assert.equal(result.poller, false);
  assert.deepEqual(result.restartNeeded, ['metrics']);
  assert.deepEqual(
    router
      .workers()
      .map((w) => w.id)
      .sort(),
    ['10.0.0.2:8000', '10.0.0.7:8000', '10.9.0.1:8000'],
  );
  assert.equal((router.policy as unknown as { lambda: number }).lambda, 4);
  const same = router.reconfigure(next);
  assert.deepEqual(
    [same.added, same.removed, same.policy],
    [[], [], false],
    'a no-op reload changes nothing',
  );
  const faster = router.reconfigure(validateConfig({ ...next, poller: { intervalSecs: 0.5 } }));
  assert.equal(faster.poller, true);
  assert.equal(
    router.poller.has(router.pool.get('10.0.0.2:8000')!),
    true,
    'the new poller polls every worker',
  );
});

test('workers() reports the contract fields and the policy score', () => {
  const router = createRouter({ workers: urls(1), policy: { name: 'least_load', mode: 'seed', lambda: 2 } });
  const w = router.pool.list()[0]!;
  w.load = { at: Date.now(), kvUsage: 0.5, running: 3, waiting: 1 };
  router.pick();
  assert.deepEqual(router.workers()[0], {
    id: '10.0.0.1:8000',
    url: 'http://10.0.0.1:8000',
    engine: 'auto',
    healthy: true,
    draining: false,
    inFlight: 1,
    processed: 1,
    kvUsage: 0.5,
    running: 3,
    waiting: 1,
    lastPollAt: null,
    score: 1 + 2,
  });
});

test('observers see picks with their duration and releases with their outcome', () => {
  const router = createRouter({ workers: urls(2) });
  const seen: string[] = [];
  router.observe({
    onPick: (lease, policy, ns) => seen.push(`pick ${lease.worker.id} ${policy} ${ns >= 0}`),
    onRelease: (lease, outcome) => seen.push(`release ${lease.worker.id} ${outcome}`),
  });
  const lease = router.pick();
  lease.release('failure');
  assert.deepEqual(seen, [`pick ${lease.worker.id} least_load true`, `release ${lease.worker.id} failure`]);
});

test('pickWithFallbacks returns the pick plus the next best by score, never the pick twice', () => {
  const router = createRouter({ workers: urls(4) }, { rng: seededRng(5) });
  const [a, b, c, d] = router.pool.list();
  a!.inFlight = 5;
  b!.inFlight = 0;
  c!.inFlight = 2;
  d!.inFlight = 1;
  const { lease, fallbacks } = router.pickWithFallbacks({}, 2);
  assert.equal(lease.worker, b);
  assert.deepEqual(
    fallbacks.map((w) => w.id),
    [d!.id, c!.id],
  );
  assert.equal(router.pickWithFallbacks({}, 10).fallbacks.length, 3);
});

test('reportFailure: connect failures eject at once, 5xx count toward the limit', () => {
  const router = createRouter({ workers: urls(2), poller: { unhealthyAfter: 3 } });
  const [a, b] = router.pool.list();
  const changes: string[] = [];
  router.observe({ onHealthChange: (w, healthy, reason) => changes.push(`${w.id} ${healthy} ${reason}`) });
  router.reportFailure(a!, 'connect');
  assert.equal(a!.healthy, false);
  router.reportFailure(b!, 'status');
  router.reportFailure(b!, 'status');
  assert.equal(b!.healthy, true);
  router.reportFailure(b!, 'status');
  assert.equal(b!.healthy, false);
  assert.deepEqual(changes, [`${a!.id} false connection failed`, `${b!.id} false upstream 5xx`]);
});
