import assert from 'node:assert/strict';
import { test } from 'node:test';
import { POLICY_NAMES, createPolicy } from '../../src/policies/registry.js';
import { LeastLoadPolicy } from '../../src/policies/least-load.js';

test('every accepted policy name builds a policy of that name', () => {
  for (const name of POLICY_NAMES) assert.equal(createPolicy(name).name, name);
});

test('config objects carry parameters; defaults come from the schema', () => {
  const custom = createPolicy({ name: 'least_load', lambda: 4 });
  assert.ok(custom instanceof LeastLoadPolicy);
  assert.equal(custom.lambda, 4);
  assert.equal((createPolicy('least_load') as LeastLoadPolicy).lambda, 1.5);
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
