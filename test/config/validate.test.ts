import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CONFIG, validateConfig } from '../../src/config/validate.js';

const bad: [string, unknown, RegExp][] = [
  [
    'NaN lambda',
    { policy: { name: 'least_load', lambda: NaN } },
    /^policy\.lambda: must be finite and >= 0, got NaN$/,
  ],
  [
    'infinite lambda',
    { policy: { name: 'least_load', lambda: Infinity } },
    /^policy\.lambda: .*got Infinity$/,
  ],
  ['negative lambda', { policy: { name: 'least_load', lambda: -0.5 } }, /^policy\.lambda: .*got -0\.5$/],
  [
    'zero poll interval',
    { poller: { intervalSecs: 0 } },
    /^poller\.intervalSecs: must be finite and > 0, got 0$/,
  ],
  ['port too high', { envoy: { port: 65536 } }, /^envoy\.port: must be an integer in 0\.\.65535, got 65536$/],
  ['fractional port', { metrics: { port: 1.5 } }, /^metrics\.port: .*got 1\.5$/],
  ['bad worker scheme', { workers: ['ftp://h:1'] }, /^workers\.0\.url: .*protocol ftp:/],
  ['worker not a URL', { workers: [{ url: 'gpu-a:8000' }] }, /^workers\.0\.url: /],
  [
    'unknown engine',
    { workers: [{ url: 'http://h:1', engine: 'ollama' }] },
    /^workers\.0\.engine: must be one of/,
  ],
  [
    'unknown policy lists the valid ones',
    { policy: 'fastest' },
    /^policy\.name: unknown policy; valid policies: random, round_robin, power_of_two, least_load, weighted, consistent_hashing, manual, prefix_hash, cache_aware, got "fastest"$/,
  ],
  ['unknown top-level key', { polling: {} }, /^polling: unknown key$/],
  ['unknown nested key', { poller: { interval: 1 } }, /^poller\.interval: unknown key$/],
  ['parameter of another policy', { policy: { name: 'random', lambda: 1 } }, /^policy\.lambda: unknown key$/],
];

for (const [name, input, message] of bad) {
  test(`config rejects ${name}`, () => {
    assert.throws(
      () => validateConfig(input),
      (err: Error & { code?: string; field?: string }) => {
        assert.equal(err.code, 'LLR_CONFIG');
        assert.match(err.message, message);
        return true;
      },
    );
  });
}

test('defaults are defined once and filled in everywhere', () => {
  assert.equal(DEFAULT_CONFIG.policy.name, 'least_load');
  assert.equal((DEFAULT_CONFIG.policy as { lambda: number }).lambda, 1.5);
  assert.equal(DEFAULT_CONFIG.poller.intervalSecs, 1);
  assert.equal(DEFAULT_CONFIG.envoy.port, 9002);
  assert.equal(DEFAULT_CONFIG.proxy.port, 0);
  assert.equal(DEFAULT_CONFIG.metrics.port, 9090);
  assert.equal(DEFAULT_CONFIG.metrics.prefix, 'llr_');
  assert.equal(DEFAULT_CONFIG.host, '0.0.0.0');
  const partial = validateConfig({ policy: { name: 'least_load' }, poller: { timeoutMs: 500 } });
  assert.equal(partial.policy.name, 'least_load');
  assert.equal((partial.policy as { lambda: number }).lambda, 1.5);
  assert.equal(partial.poller.intervalSecs, 1);
});

test('bare strings are accepted for workers and policies', () => {
  const config = validateConfig({
    workers: ['http://h:1', { url: 'http://g:2', engine: 'vllm' }],
    policy: 'random',
  });
  assert.deepEqual(config.workers, [
    { url: 'http://h:1', engine: 'auto', weight: 1 },
    { url: 'http://g:2', engine: 'vllm', weight: 1 },
  ]);
  assert.deepEqual(config.policy, { name: 'random' });
});
