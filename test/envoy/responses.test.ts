import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NoHealthyWorkerError } from '../../src/core/errors.js';
import type { ProcessingResponse } from '../../src/envoy/messages.js';
import { loadProtos } from '../../src/envoy/proto-loader.js';
import {
  continueResponse,
  encodeOnce,
  errorResponse,
  RouteResponseCache,
} from '../../src/envoy/responses.js';

const encode = (loadProtos().extProc.Process as { responseSerialize: (v: ProcessingResponse) => Buffer })
  .responseSerialize;

test('RouteResponseCache: one object per phase and destination', () => {
  const cache = new RouteResponseCache('x-dest');
  const a = cache.get('request_headers', '10.0.0.1:80');
  assert.equal(cache.get('request_headers', '10.0.0.1:80'), a);
  assert.notEqual(cache.get('request_headers', '10.0.0.2:80'), a);
  const body = cache.get('request_body', '10.0.0.1:80');
  assert.ok(body.request_body && !body.request_headers);
  assert.ok(a.request_headers && !a.request_body);
});

test('encodeOnce: shared responses are encoded once, fresh ones every time, same bytes either way', () => {
  let calls = 0;
  const counted = (v: ProcessingResponse) => {
    calls += 1;
    return encode(v);
  };
  const once = encodeOnce(counted);
  const route = new RouteResponseCache('x-dest').get('request_headers', '10.0.0.1:80');
  const first = once(route);
  assert.equal(once(route), first);
  assert.equal(once(continueResponse('response_headers')), once(continueResponse('response_headers')));
  assert.equal(calls, 2);
  const fresh = errorResponse(503, new NoHealthyWorkerError());
  once(fresh);
  once(fresh);
  assert.equal(calls, 4, 'responses built per request are not cached');
  assert.deepEqual(first, encode(route));
});
