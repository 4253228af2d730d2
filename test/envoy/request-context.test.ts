import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contextWithBody } from '../../src/envoy/request-body.js';
import { bodyFields } from '../../src/policies/body-fields.js';
import { contextFromHeaders, findHeader, headerValue } from '../../src/envoy/request-context.js';

const DEST = 'x-gateway-destination-endpoint';

test('header values: raw_value wins, value is the fallback, bytes are kept as latin1', () => {
  assert.equal(headerValue({ key: 'a', raw_value: Buffer.from('raw') }), 'raw');
  assert.equal(headerValue({ key: 'a', value: 'plain' }), 'plain');
  assert.equal(headerValue({ key: 'a', value: 'plain', raw_value: Buffer.alloc(0) }), 'plain');
  assert.equal(headerValue({ key: 'a' }), '');
  assert.equal(headerValue({ key: 'a', raw_value: Buffer.from([0xe9, 0x41]) }), '\u00e9A');
  const sliced = Buffer.from('xxhello').subarray(2);
  assert.equal(headerValue({ key: 'a', raw_value: sliced }), 'hello');
});

test('contextFromHeaders: pseudo-headers to fields, others lower-cased, repeats joined, our header dropped', () => {
  const ctx = contextFromHeaders(
    {
      headers: [
        { key: ':method', raw_value: Buffer.from('POST') },
        { key: ':path', raw_value: Buffer.from('/v1/completions?x=1') },
        { key: ':authority', value: 'api.example' },
        { key: ':scheme', raw_value: Buffer.from('https') },
        { key: 'X-Session', raw_value: Buffer.from('s1') },
        { key: 'accept', raw_value: Buffer.from('a/b') },
        { key: 'accept', value: 'c/d' },
        { key: DEST, raw_value: Buffer.from('6.6.6.6:1') },
        { key: '', raw_value: Buffer.from('ignored') },
      ],
    },
    DEST,
  );
  assert.deepEqual(ctx, {
    method: 'POST',
    path: '/v1/completions?x=1',
    authority: 'api.example',
    headers: { 'x-session': 's1', accept: 'a/b, c/d' },
  });
});

test('contextFromHeaders: authority falls back to host; an empty map gives an empty context', () => {
  assert.equal(contextFromHeaders({ headers: [{ key: 'host', value: 'h:1' }] }, DEST).authority, 'h:1');
  assert.deepEqual(contextFromHeaders(undefined, DEST), { headers: {} });
});

test('findHeader: first value of a header, any case, undefined when absent', () => {
  const map = {
    headers: [
      { key: ':status', raw_value: Buffer.from('502') },
      { key: ':status', value: '200' },
    ],
  };
  assert.equal(findHeader(map, ':status'), '502');
  assert.equal(findHeader({ headers: [{ key: 'Content-Type', value: 'x' }] }, 'content-type'), 'x');
  assert.equal(findHeader(map, 'nope'), undefined);
  assert.equal(findHeader(undefined, ':status'), undefined);
});

const body = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

test('contextWithBody: model and flattened chat messages (strings and text parts, in order)', () => {
  const base = { path: '/v1/chat/completions', headers: { 'content-type': 'application/json' } };
  const ctx = contextWithBody(
    base,
    body({
      model: 'qwen',
      messages: [
        { role: 'system', content: 'S' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'A' },
            { type: 'text', text: 'B' },
          ],
        },
        'junk',
        { role: 'user', content: 'C' },
      ],
    }),
  );
  assert.equal(ctx.model, 'qwen');
  assert.equal(ctx.prompt, 'S\nA\nB\nC');
  assert.equal(ctx.promptTokens, Math.ceil('S\nA\nB\nC'.length / 4));
  assert.equal(ctx.path, '/v1/chat/completions');
  assert.equal((base as { prompt?: string }).prompt, undefined, 'the input context is not changed');
});

test('contextWithBody: the same fields as the Express front door for the same body', () => {
  const bodies = [
    { model: 'm', prompt: 'hi' },
    { prompt: ['a', 'b'] },
    { prompt: [1, 2, 3] },
    { text: 'sglang style' },
    { inputs: 'tgi style' },
    { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }, { content: 'x' }] },
  ];
  for (const b of bodies) {
    const ctx = contextWithBody({ headers: {} }, body(b));
    const { headers: _h, ...fields } = ctx;
    assert.deepEqual(fields, bodyFields(b), JSON.stringify(b));
  }
});

test('contextWithBody: non-JSON, non-object JSON and empty bodies leave the context as it was', () => {
  const ctx = { path: '/p' };
  for (const b of [
    body('not json {'),
    body('[1,2]'),
    body('"str"'),
    body('null'),
    Buffer.alloc(0),
    undefined,
  ]) {
    assert.equal(contextWithBody(ctx, b), ctx);
  }
  const declaredText = { headers: { 'content-type': 'text/plain' } };
  assert.equal(
    contextWithBody(declaredText, body({ prompt: 'x' })),
    declaredText,
    'content-type says not JSON',
  );
});
