import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkerPool } from '../../src/core/worker-pool.js';

test('add, get, list and duplicate rejection', () => {
  const pool = new WorkerPool();
  const a = pool.add('http://a:1');
  pool.add({ url: 'http://b:2', engine: 'sglang' });
  assert.equal(pool.size, 2);
  assert.equal(pool.get('a:1'), a);
  assert.deepEqual(
    pool.list().map((w) => w.id),
    ['a:1', 'b:2'],
  );
  assert.throws(() => pool.add('http://a:1/'), { code: 'LLR_DUPLICATE_WORKER' });
});

test('candidates follow health and draining, and the array is reused between changes', () => {
  const pool = new WorkerPool();
  const a = pool.add('http://a:1');
  const b = pool.add('http://b:2');
  const first = pool.candidates();
  assert.equal(pool.candidates(), first, 'no new array while nothing changed');
  a.setHealthy(false);
  assert.deepEqual(
    pool.candidates().map((w) => w.id),
    ['b:2'],
  );
  a.setHealthy(true);
  b.setDraining();
  assert.deepEqual(
    pool.candidates().map((w) => w.id),
    ['a:1'],
  );
});

test('remove notifies listeners once and stops watching the worker', () => {
  const pool = new WorkerPool();
  const a = pool.add('http://a:1');
  const removed: string[] = [];
  pool.onRemove((w) => removed.push(w.id));
  assert.equal(pool.remove('a:1'), a);
  assert.equal(pool.remove('a:1'), undefined);
  assert.deepEqual(removed, ['a:1']);
  const before = pool.candidates();
  a.setHealthy(false); // a removed worker's health changes must not touch the pool
  assert.equal(pool.candidates(), before);
  assert.equal(pool.candidates().length, 0);
});
