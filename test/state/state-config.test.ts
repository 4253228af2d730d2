import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateConfig } from '../../src/config/validate.js';
import { RouterMetrics } from '../../src/metrics/router-metrics.js';
import { createRouter } from '../../src/router.js';

test('state.redis: defaults filled in, absent by default', () => {
  assert.equal(validateConfig({}).state, undefined);
  assert.deepEqual(validateConfig({ state: { redis: { url: 'redis://10.0.0.9:6379/2' } } }).state, {
    redis: { url: 'redis://10.0.0.9:6379/2', keyPrefix: 'llr:', refreshMs: 5, heartbeatTtlSecs: 3 },
  });
  assert.deepEqual(validateConfig({ state: {} }).state, {});
});

test('state.redis: bad values name the field, the reason and the value', () => {
  const cases: [unknown, RegExp][] = [
    [
      { redis: { url: 'http://10.0.0.9:6379' } },
      /^state\.redis\.url: must be a redis:\/\/ or rediss:\/\/ URL, got "http/,
    ],
    [{ redis: {} }, /^state\.redis\.url: must be a redis:\/\/ or rediss:\/\/ URL, got nothing/],
    [
      { redis: { url: 'redis://r', refreshMs: 0 } },
      /^state\.redis\.refreshMs: must be an integer in 1\.\.60000, got 0/,
    ],
    [
      { redis: { url: 'redis://r', heartbeatTtlSecs: 0.01 } },
      /^state\.redis\.heartbeatTtlSecs: must be finite and in 0\.1\.\.3600, got 0\.01/,
    ],
    [
      { redis: { url: 'redis://r', keyPrefix: 'a b' } },
      /^state\.redis\.keyPrefix: must not contain whitespace/,
    ],
    [{ redis: { url: 'redis://r', ttl: 3 } }, /^state\.redis\.ttl: unknown key/],
    [{ etcd: {} }, /^state\.etcd: unknown key/],
  ];
  for (const [state, message] of cases) {
    assert.throws(() => validateConfig({ state }), { code: 'LLR_CONFIG', message }, JSON.stringify(state));
  }
});

test('without state.redis there is no shared state: degraded gauge 0, picks count locally', async () => {
  const router = createRouter({ workers: ['http://10.0.0.1:8000'] });
  assert.equal(router.sharedState, undefined);
  const lease = router.pick();
  assert.equal(lease.worker.ownInFlight, 1);
  assert.equal(lease.worker.inFlight, 1);
  lease.release();
  assert.equal(lease.worker.ownInFlight, 0);
  const metrics = new RouterMetrics(router);
  const text = await metrics.text();
  assert.match(text, /^llr_shared_state_degraded 0$/m);
  assert.doesNotMatch(text, /^llr_shared_state_errors_total\{/m);
});

test('a state change in a reload needs a restart', () => {
  const router = createRouter({ workers: ['http://10.0.0.1:8000'] });
  const result = router.reconfigure(
    validateConfig({ workers: ['http://10.0.0.1:8000'], state: { redis: { url: 'redis://r:6379' } } }),
  );
  assert.deepEqual(result.restartNeeded, ['state']);
});
