import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { RouterMetrics } from '../../src/metrics/router-metrics.js';
import { createRouter } from '../../src/router.js';

/** Value of one series in Prometheus text, or undefined when the series is absent. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function setup(prefix?: string) {
  const router = createRouter({ workers: ['http://10.0.0.1:8000', 'http://10.0.0.2:8000'] });
  const metrics = new RouterMetrics(router, prefix === undefined ? {} : { prefix });
  return { router, metrics };
}

test('request, in-flight and outcome series follow picks and releases', async () => {
  const { router, metrics } = setup();
  const leases = [router.pick(), router.pick(), router.pick()];
  let text = await metrics.text();
  const a = leases[0]!.worker.id;
  assert.equal(
    value(text, `llr_requests_total{worker="${a}",policy="least_load"}`),
    a === leases[2]!.worker.id ? 2 : 1,
  );
  const inFlight = router.pool.list().map((w) => value(text, `llr_worker_in_flight{worker="${w.id}"}`) ?? 0);
  assert.equal(
    inFlight.reduce((x, y) => x + y, 0),
    3,
  );
  leases[0]!.release('failure');
  leases[1]!.release();
  leases[2]!.release('cancelled');
  text = await metrics.text();
  for (const w of router.pool.list()) assert.equal(value(text, `llr_worker_in_flight{worker="${w.id}"}`), 0);
  assert.equal(value(text, `llr_request_outcomes_total{worker="${a}",outcome="failure"}`), 1);
  assert.equal(value(text, 'llr_pick_duration_seconds_count'), 3);
});

test('load, health, poll and no-healthy-worker series', async () => {
  const { router, metrics } = setup('gw_');
  const [a, b] = router.pool.list();
  a!.load = { at: Date.now(), kvUsage: 0.42, running: 7, waiting: 2 };
  router.notifyPoll(a!, 'ok', 0.004);
  router.notifyPoll(b!, 'timeout', 1);
  router.reportFailure(b!, 'connect');
  let text = await metrics.text();
  assert.equal(value(text, `gw_worker_kv_usage_ratio{worker="${a!.id}"}`), 0.42);
  assert.equal(
    value(text, `gw_worker_kv_usage_ratio{worker="${b!.id}"}`),
    undefined,
    'unknown is absent, not 0',
  );
  assert.equal(value(text, `gw_worker_running_requests{worker="${a!.id}"}`), 7);
  assert.equal(value(text, `gw_worker_waiting_requests{worker="${a!.id}"}`), 2);
  assert.equal(value(text, `gw_worker_healthy{worker="${b!.id}"}`), 0);
  assert.equal(value(text, `gw_load_polls_total{worker="${b!.id}",result="timeout"}`), 1);
  assert.equal(value(text, `gw_upstream_errors_total{worker="${b!.id}",kind="connect"}`), 1);
  assert.equal(value(text, 'gw_load_poll_duration_seconds_count'), 2);
  a!.setHealthy(false);
  assert.throws(() => router.pick());
  text = await metrics.text();
  assert.equal(value(text, 'gw_no_healthy_worker_total'), 1);
  assert.equal(value(text, 'gw_workers{state="unhealthy"}'), 2);
});

test('a removed worker leaves no series behind', async () => {
  const { router, metrics } = setup();
  const lease = router.pick();
  router.notifyPoll(lease.worker, 'ok', 0.01);
  lease.release();
  router.removeWorker(lease.worker.id);
  const text = await metrics.text();
  assert.ok(!text.includes(lease.worker.id), 'no series mentions the removed worker');
});

test('a private registry by default; the user may pass one', async () => {
  const router = createRouter({ workers: ['http://10.0.0.1:8000'] });
  const one = new RouterMetrics(router);
  const two = new RouterMetrics(createRouter({ workers: ['http://10.0.0.1:8000'] }));
  assert.notEqual(one.registry, two.registry);
  const mine = new Registry();
  const three = new RouterMetrics(router, { registry: mine, prefix: 'x_' });
  assert.equal(three.registry, mine);
  assert.match(await mine.metrics(), /x_requests_total/);
});

test('promtool check metrics reports nothing', async () => {
  const { router, metrics } = setup();
  const lease = router.pick();
  router.notifyPoll(lease.worker, 'parse_error', 0.02);
  lease.release();
  const result = spawnSync('promtool', ['check', 'metrics'], {
    input: await metrics.text(),
    encoding: 'utf8',
  });
  assert.equal(result.error, undefined, 'promtool must be installed (.ci/run installs Debian prometheus)');
  assert.equal(result.status, 0, result.stdout + result.stderr);
  assert.equal((result.stdout + result.stderr).trim(), '');
});
