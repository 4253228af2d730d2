import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCase } from '../../src/sim/policy-comparison.js';
import { createWorkload } from '../../src/sim/workload.js';

test('policy benchmark harness: a short run end to end through the proxy, oracle included', async () => {
  const options = { scenario: 'mixed' as const, seed: 3, durationSec: 6, load: 0.6, speedup: 4 };
  for (const policy of ['least_load', 'oracle'] as const) {
    const r = await runCase({ label: policy, policy, pollIntervalSecs: 0.5 }, options);
    const expected = createWorkload({ seed: 3, ratePerSec: r.rateRps, durationSec: 6 }).length;
    assert.equal(r.summary.requests, expected, 'every scheduled request was sent');
    assert.equal(r.summary.errors, 0, JSON.stringify(r.summary.errorKinds));
    assert.equal(r.ttftMs.length, expected);
    const share = Object.values(r.summary.share).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(share - 1) < 1e-9);
    assert.ok(
      Object.keys(r.summary.share).every((name) => /^(h100|a100|l40s)-/.test(name)),
      'shares by worker name',
    );
    assert.ok(r.summary.ttftMs.p50 > 0);
    if (policy === 'least_load') assert.ok(r.polls > 0, 'the real poller ran');
  }
});
