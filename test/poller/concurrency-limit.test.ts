import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConcurrencyLimit } from '../../src/poller/concurrency-limit.js';
import { PollCancelledError } from '../../src/poller/errors.js';

test('at most `limit` holders; waiters are served in order; release is idempotent', async () => {
  const limit = new ConcurrencyLimit(2);
  const a = await limit.acquire();
  const b = await limit.acquire();
  const order: string[] = [];
  const c = limit.acquire().then((r) => (order.push('c'), r));
  const d = limit.acquire().then((r) => (order.push('d'), r));
  assert.deepEqual([limit.active, limit.waiting], [2, 2]);
  a();
  a();
  const releaseC = await c;
  assert.deepEqual([limit.active, limit.waiting], [2, 1]);
  b();
  const releaseD = await d;
  assert.deepEqual(order, ['c', 'd']);
  releaseC();
  releaseD();
  assert.deepEqual([limit.active, limit.waiting], [0, 0]);
});

test('an aborted waiter leaves the queue with PollCancelledError', async () => {
  const limit = new ConcurrencyLimit(1);
  const held = await limit.acquire();
  const controller = new AbortController();
  const waiting = limit.acquire(controller.signal);
  assert.equal(limit.waiting, 1);
  controller.abort();
  await assert.rejects(waiting, PollCancelledError);
  assert.equal(limit.waiting, 0);
  held();
  assert.equal(limit.active, 0);
  await assert.rejects(limit.acquire(controller.signal), PollCancelledError);
  assert.throws(() => new ConcurrencyLimit(0), RangeError);
});
