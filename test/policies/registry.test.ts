import assert from 'node:assert/strict';
import { test } from 'node:test';
import { POLICY_NAMES, createPolicy } from '../../src/policies/registry.js';
import { ExpectedWaitPolicy } from '../../src/policies/expected-wait.js';
import { LeastLoadPolicy } from '../../src/policies/least-load.js';
import { WeightedPolicy } from '../../src/policies/weighted.js';

test('every accepted policy name builds a policy of that name', () => {
  for (const name of POLICY_NAMES) assert.equal(createPolicy(name).name, name);
});

test('config objects carry parameters; defaults come from the schema', () => {
  const custom = createPolicy({ name: 'least_load', mode: 'seed', lambda: 4 });
  assert.ok(custom instanceof LeastLoadPolicy);
  assert.equal(custom.lambda, 4);
  assert.ok(createPolicy('least_load') instanceof ExpectedWaitPolicy, 'expected_wait is the default mode');
  assert.equal((createPolicy({ name: 'least_load', mode: 'seed' }) as LeastLoadPolicy).lambda, 1.5);
});

test('unknown names and bad parameters are rejected with codes', () => {
  assert.throws(
    () => createPolicy('fastest'),
    (err: Error & { code?: string }) => {
      return err.code === 'LLR_UNKNOWN_POLICY' && err.message.includes('least_load');
    },
  );
  assert.throws(() => createPolicy({ name: 'least_load', lambda: -1 }), {
    code: 'LLR_CONFIG',
    message: /policy\.lambda: must be finite and >= 0, got -1/,
  });
});

test('least_load modes and the weighted policy build from config', () => {
  const seed = createPolicy({ name: 'least_load', mode: 'seed' });
  assert.ok(seed instanceof LeastLoadPolicy);
  const ew = createPolicy({ name: 'least_load', mode: 'expected_wait', lambdaT: 0.3, bodyAware: true });
  assert.ok(ew instanceof ExpectedWaitPolicy);
  assert.equal(ew.options.lambdaT, 0.3);
  assert.equal(ew.needsBody, true);
  assert.equal(ew.name, 'least_load');
  assert.ok(createPolicy('weighted') instanceof WeightedPolicy);
  assert.ok(
    createPolicy({ name: 'weighted', scorers: [{ name: 'in_flight', weight: 1 }] }) instanceof WeightedPolicy,
  );
  assert.throws(() => createPolicy({ name: 'weighted', scorers: [{ name: 'latency', weight: 1 }] }), {
    message: /^policy\.scorers\.0\.name: must be one of queue, kv, in_flight, prefix, got "latency"$/,
  });
  assert.throws(() => createPolicy({ name: 'least_load', mode: 'fast' }), {
    message: /^policy\.mode: must be one of seed, expected_wait/,
  });
});
