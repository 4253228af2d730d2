import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Lease } from '../../src/core/lease.js';
import { Worker } from '../../src/core/worker.js';

test('release subtracts exactly once; a second call is a no-op', () => {
  const w = new Worker('http://a:1');
  w.inFlight = 2;
  const outcomes: string[] = [];
  const lease = new Lease(w, (_l, outcome) => outcomes.push(outcome));
  assert.equal(lease.release('failure'), true);
  assert.equal(lease.release('success'), false);
  assert.equal(w.inFlight, 1);
  assert.equal(lease.released, true);
  assert.deepEqual(outcomes, ['failure']);
});

test('in-flight never goes negative', () => {
  const w = new Worker('http://a:1');
  const lease = new Lease(w);
  lease.release();
  assert.equal(w.inFlight, 0);
});
