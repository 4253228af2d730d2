import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker, parseWorkerUrl } from '../../src/core/worker.js';

test('worker id is host:port, with the scheme default port filled in', () => {
  const cases: [string, string, string][] = [
    ['http://10.0.0.5:30000', '10.0.0.5:30000', 'http://10.0.0.5:30000'],
    ['http://10.0.0.5:30000/', '10.0.0.5:30000', 'http://10.0.0.5:30000'],
    ['http://gpu-a', 'gpu-a:80', 'http://gpu-a:80'],
    ['https://gpu-a', 'gpu-a:443', 'https://gpu-a:443'],
    ['http://[::1]:8000', '[::1]:8000', 'http://[::1]:8000'],
    ['http://h:8000/prefix/', 'h:8000', 'http://h:8000/prefix'],
  ];
  for (const [raw, id, url] of cases) {
    const w = new Worker(raw);
    assert.equal(w.id, id, raw);
    assert.equal(w.url, url, raw);
  }
});

test('only absolute http: and https: URLs are accepted, with a clear error', () => {
  for (const raw of [
    'ftp://h:21',
    'grpc://h:1',
    '10.0.0.5:30000',
    'not a url',
    'http://u:p@h:1',
    'http://h:1/?x=1',
  ]) {
    assert.throws(
      () => parseWorkerUrl(raw),
      (err: Error & { code?: string }) => err.code === 'LLR_INVALID_WORKER_URL' && err.message.includes(raw),
      raw,
    );
  }
});

test('spec fields carry over; engine defaults to auto', () => {
  const w = new Worker({ url: 'http://h:1', engine: 'vllm', apiKey: 'k', weight: 2 });
  assert.equal(w.engine, 'vllm');
  assert.equal(w.detectedEngine, 'vllm');
  assert.equal(w.apiKey, 'k');
  assert.equal(w.weight, 2);
  const auto = new Worker('http://h:1');
  assert.equal(auto.engine, 'auto');
  assert.equal(auto.detectedEngine, undefined);
});
