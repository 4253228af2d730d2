import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createRouter } from '../../src/router.js';
import { adminRequestHandler } from '../../src/status/admin-api.js';

const TOKEN = 's3cret-token-for-tests';

async function setup(t: { after: (fn: () => void) => void }) {
  const router = createRouter({ workers: ['http://10.0.0.1:8000'] });
  const handle = adminRequestHandler(router, { token: TOKEN });
  const server = createServer((req, res) => {
    void handle(req, res).then((handled) => {
      if (!handled) res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const call = (method: string, path: string, body?: unknown, token: string | null = TOKEN) =>
    fetch(`${base}${path}`, {
      method,
      headers: {
        ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
        'content-type': 'application/json',
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
  return { router, call };
}

test('a missing or wrong token gets 401 and changes nothing', async (t) => {
  const { router, call } = await setup(t);
  for (const token of [null, 'wrong', `${TOKEN}x`, '']) {
    const res = await call('POST', '/workers', { url: 'http://10.0.0.2:8000' }, token);
    assert.equal(res.status, 401, String(token));
    assert.match(res.headers.get('www-authenticate') ?? '', /Bearer/);
  }
  assert.equal((await call('DELETE', '/workers/10.0.0.1:8000', undefined, 'nope')).status, 401);
  assert.equal(router.workers().length, 1);
});

test('the right token adds and removes workers; bad input is a clear 4xx', async (t) => {
  const { router, call } = await setup(t);
  const created = await call('POST', '/workers', { url: 'http://10.0.0.2:8000', engine: 'sglang' });
  assert.equal(created.status, 201);
  assert.equal(((await created.json()) as { id: string }).id, '10.0.0.2:8000');
  assert.equal(router.pool.get('10.0.0.2:8000')?.engine, 'sglang');

  assert.equal((await call('POST', '/workers', { url: 'http://10.0.0.2:8000' })).status, 409);
  const bad = await call('POST', '/workers', { url: 'ftp://x' });
  assert.equal(bad.status, 400);
  assert.match(((await bad.json()) as { error: { message: string } }).error.message, /url: .*ftp:/);
  assert.equal((await call('POST', '/workers', '{not json')).status, 400);
  assert.equal((await call('POST', '/workers', { url: 'http://10.0.0.3:1', bogus: 1 })).status, 400);

  const removed = await call('DELETE', '/workers/10.0.0.2:8000');
  assert.equal(removed.status, 202);
  assert.equal(router.pool.has('10.0.0.2:8000'), false);
  assert.equal((await call('DELETE', '/workers/10.0.0.2:8000')).status, 404);
});
