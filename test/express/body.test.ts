import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { reserializeBody } from '../../src/express/body.js';
import { createPathRewriter } from '../../src/express/path-rewrite.js';
import { bodyFields, parseJsonBody } from '../../src/policies/body-fields.js';

test('bodyFields: OpenAI chat, completions, token ids, SGLang text, TGI inputs', () => {
  const table: [unknown, ReturnType<typeof bodyFields>][] = [
    [
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'abcd' },
          { role: 'assistant', content: 'efgh' },
        ],
      },
      { model: 'm', prompt: 'abcd\nefgh', promptTokens: 3 },
    ],
    [
      {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image_url' }, 'there'] }],
      },
      { prompt: 'hi\nthere', promptTokens: 2 },
    ],
    [{ messages: [{ role: 'tool' }, null, 'x'] }, { prompt: '', promptTokens: 0 }],
    [
      { model: 'm', prompt: 'abcdefghi' },
      { model: 'm', prompt: 'abcdefghi', promptTokens: 3 },
    ],
    [{ prompt: ['ab', 'cd'] }, { prompt: 'ab\ncd', promptTokens: 2 }],
    [{ prompt: [1, 2, 3, 4, 5] }, { promptTokens: 5 }],
    [{ text: 'abcd' }, { prompt: 'abcd', promptTokens: 1 }],
    [{ inputs: 'abcde' }, { prompt: 'abcde', promptTokens: 2 }],
    [{ model: 7 }, {}],
    ['not an object', {}],
    [undefined, {}],
  ];
  for (const [body, expected] of table) assert.deepEqual(bodyFields(body), expected, JSON.stringify(body));
});

test('parseJsonBody tolerates what it cannot read', () => {
  assert.deepEqual(parseJsonBody(Buffer.from('{"a":1}'), 'application/json'), { a: 1 });
  assert.deepEqual(parseJsonBody(Buffer.from('{"a":1}'), undefined), { a: 1 }, 'sniffed without a type');
  assert.equal(parseJsonBody(Buffer.from('{"a":'), 'application/json'), undefined);
  assert.equal(parseJsonBody(Buffer.from('a=1'), 'application/x-www-form-urlencoded'), undefined);
  assert.equal(parseJsonBody(Buffer.alloc(0), 'application/json'), undefined);
});

const fakeReq = (body: unknown, type?: string) =>
  ({ body, headers: type ? { 'content-type': type } : {} }) as unknown as IncomingMessage & {
    body?: unknown;
  };

test('reserializeBody: JSON, flat forms, strings and buffers; refuses what it cannot rebuild', () => {
  assert.equal(reserializeBody(fakeReq({ a: [1, 'é'] }, 'application/json')).toString(), '{"a":[1,"é"]}');
  assert.equal(
    reserializeBody(fakeReq({ a: 'x y', b: 2 }, 'application/x-www-form-urlencoded')).toString(),
    'a=x+y&b=2',
  );
  assert.equal(reserializeBody(fakeReq('plain', 'text/plain')).toString(), 'plain');
  assert.equal(reserializeBody(fakeReq(Buffer.from([1, 2]), 'application/octet-stream')).length, 2);
  assert.equal(reserializeBody(fakeReq(undefined)).length, 0);
  assert.throws(() => reserializeBody(fakeReq({ a: { nested: 1 } }, 'application/x-www-form-urlencoded')), {
    code: 'LLR_BODY_CONSUMED',
  });
  assert.throws(() => reserializeBody(fakeReq({ file: {} }, 'multipart/form-data; boundary=x')), {
    code: 'LLR_BODY_CONSUMED',
  });
});

test('path rewrite: first matching rule only; functions may decline', () => {
  const req = {} as IncomingMessage;
  const rules = createPathRewriter({ '^/v1/': '/', '^/': '/never/' });
  assert.equal(rules('/v1/completions?x=1', req), '/completions?x=1');
  assert.equal(rules('/health', req), '/never/health');
  const fn = createPathRewriter((p) => (p === '/a' ? '/b' : undefined));
  assert.equal(fn('/a', req), '/b');
  assert.equal(fn('/c', req), '/c');
  assert.equal(createPathRewriter(undefined)('/same', req), '/same');
});
