import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { ConfigError } from '../../src/core/errors.js';
import { leastLoadRouter } from '../../src/express/middleware.js';
import { parseMiddlewareOptions } from '../../src/express/options.js';
import { createRouter } from '../../src/router.js';

test('defaults: no total timeout, retries on with an 8 MiB replay buffer', () => {
  const o = parseMiddlewareOptions({});
  assert.deepEqual(o.timeouts, { connectTimeoutMs: 10_000, idleTimeoutMs: 0, proxyTimeoutMs: 0 });
  assert.deepEqual(o.retry, { enabled: true, maxBodyBytes: 8 * 1024 * 1024 });
  assert.equal(o.maxBodyBytes, 16 * 1024 * 1024);
});

const bad: [string, unknown, string, RegExp][] = [
  ['a worker URL', { workers: ['not a url'] }, 'workers.0.url', /absolute URL/],
  ['a worker engine', { workers: [{ url: 'http://h:1', engine: 'nope' }] }, 'workers.0.engine', /one of/],
  ['a policy', { policy: 'fastest' }, 'policy.name', /unknown policy/],
  ['a lambda', { policy: { name: 'least_load', lambda: -1 } }, 'policy.lambda', />= 0/],
  ['a poll interval', { poller: { intervalSecs: 0 } }, 'poller.intervalSecs', /> 0/],
  ['a timeout', { timeouts: { proxyTimeoutMs: -5 } }, 'timeouts.proxyTimeoutMs', /milliseconds/],
  ['a timeout key', { timeouts: { total: 5 } }, 'timeouts.total', /unknown key/],
  ['retry.enabled', { retry: { enabled: 'yes' } }, 'retry.enabled', /true or false/],
  ['retry.maxBodyBytes', { retry: { maxBodyBytes: 1.5 } }, 'retry.maxBodyBytes', /integer number of bytes/],
  ['maxBodyBytes', { maxBodyBytes: -1 }, 'maxBodyBytes', /integer number of bytes/],
  ['a pathRewrite regex', { pathRewrite: { '(': '/' } }, 'pathRewrite.(', /invalid regular expression/],
  ['a pathRewrite value', { pathRewrite: { '^/v1': 1 } }, 'pathRewrite', /function/],
  ['metrics', { metrics: {} }, 'metrics', /prom-client Registry/],
  ['router', { router: {} }, 'router', /Router/],
  ['observer', { observer: { onReject: 1 } }, 'observer', /callbacks/],
  ['an unknown key', { wrokers: [] }, 'wrokers', /unknown key/],
];

for (const [what, input, field, reason] of bad) {
  test(`bad ${what} throws ConfigError naming ${field}`, () => {
    assert.throws(
      () => leastLoadRouter(input as Parameters<typeof leastLoadRouter>[0]),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.equal(err.code, 'LLR_CONFIG');
        assert.equal(err.field, field);
        assert.match(err.message, reason);
        return true;
      },
    );
  });
}

test('a shared router excludes workers, policy and poller', () => {
  const router = createRouter({ workers: ['http://127.0.0.1:1'] });
  for (const key of ['workers', 'policy', 'poller'] as const) {
    assert.throws(
      () => leastLoadRouter({ router, [key]: key === 'workers' ? [] : key === 'policy' ? 'random' : {} }),
      {
        code: 'LLR_CONFIG',
        field: key,
      },
    );
  }
});

test('options become the router: workers, policy, poller; metrics registry kept', async () => {
  const metrics = new Registry();
  const mw = leastLoadRouter({
    workers: ['http://127.0.0.1:1', { url: 'http://127.0.0.1:2', engine: 'vllm', weight: 2 }],
    policy: { name: 'least_load', lambda: 3 },
    poller: { intervalSecs: 60 },
    metrics,
  });
  try {
    assert.equal(mw.metrics, metrics);
    assert.deepEqual(
      mw.router.workers().map((w) => w.id),
      ['127.0.0.1:1', '127.0.0.1:2'],
    );
    assert.equal(mw.router.policy.name, 'least_load');
    assert.equal(mw.router.config.poller.intervalSecs, 60);
    assert.equal(mw.router.pool.get('127.0.0.1:2')?.weight, 2);
  } finally {
    await mw.close();
  }
});

test('without a metrics option the middleware keeps a private registry', async () => {
  const a = leastLoadRouter({});
  const b = leastLoadRouter({});
  assert.ok(a.metrics instanceof Registry);
  assert.notEqual(a.metrics, b.metrics);
  await Promise.all([a.close(), b.close()]);
});

test('a shared router is used as is and not stopped by close()', async () => {
  const router = createRouter({ workers: ['http://127.0.0.1:1'], poller: { intervalSecs: 60 } });
  let stopped = 0;
  const stop = router.stop.bind(router);
  router.stop = async () => {
    stopped += 1;
    await stop();
  };
  const mw = leastLoadRouter({ router });
  assert.equal(mw.router, router);
  await mw.close();
  assert.equal(stopped, 0);
  const own = leastLoadRouter({ workers: ['http://127.0.0.1:1'], poller: { intervalSecs: 60 } });
  const ownStop = own.router.stop.bind(own.router);
  own.router.stop = async () => {
    stopped += 1;
    await ownStop();
  };
  await Promise.all([own.close(), own.close()]);
  assert.equal(stopped, 1, 'close() stops the router it created, once');
});
