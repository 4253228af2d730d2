import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { PollCancelledError, PollRequestError } from '../../src/poller/errors.js';
import { fetchLimited } from '../../src/poller/fetch-limited.js';
import { listen } from './helpers.js';

type T = { after: (fn: () => Promise<void> | void) => void };

const opts = { timeoutMs: 2000, maxBytes: 1024 };

async function server(t: T, handler: Parameters<typeof listen>[0]) {
  const s = await listen(handler);
  t.after(() => s.close());
  return s;
}

const isResult = (result: string) => (err: unknown) =>
  err instanceof PollRequestError && err.result === result;

test('resolves any status with the body; sends the given headers', async (t) => {
  let auth: string | undefined;
  const s = await server(t, (req, res) => {
    auth = req.headers.authorization;
    res.writeHead(req.url === '/missing' ? 404 : 200).end(`you asked ${req.url}`);
  });
  assert.deepEqual(
    await fetchLimited(`${s.url}/x?y=1`, { ...opts, headers: { authorization: 'Bearer k' } }),
    {
      status: 200,
      body: 'you asked /x?y=1',
    },
  );
  assert.equal(auth, 'Bearer k');
  assert.equal((await fetchLimited(`${s.url}/missing`, opts)).status, 404);
});

test('a body exactly at the cap is fine; one byte more is too_large (declared or streamed)', async (t) => {
  const s = await server(t, (req, res) => {
    const size = Number(req.url?.slice(1));
    if (req.url?.startsWith('/chunked')) {
      // No content-length: the cap must trip mid-stream.
      res.writeHead(200, { 'transfer-encoding': 'chunked' });
      const write = (left: number): void => {
        if (left <= 0) return void res.end();
        res.write('x'.repeat(Math.min(300, left)), () => write(left - 300));
      };
      write(Number(req.url.slice('/chunked/'.length)));
      return;
    }
    res.end('y'.repeat(size));
  });
  assert.equal((await fetchLimited(`${s.url}/1024`, opts)).body.length, 1024);
  await assert.rejects(fetchLimited(`${s.url}/1025`, opts), isResult('too_large'));
  assert.equal((await fetchLimited(`${s.url}/chunked/900`, opts)).body.length, 900);
  await assert.rejects(fetchLimited(`${s.url}/chunked/100000000`, opts), isResult('too_large'));
});

test('timeout covers a server that never answers and one that stalls mid-body', async (t) => {
  const stalled: ServerResponse[] = [];
  const s = await server(t, (req, res) => {
    stalled.push(res);
    if (req.url === '/partial') {
      res.writeHead(200, { 'content-length': '100' });
      res.write('only some');
    }
  });
  t.after(() => stalled.forEach((r) => r.destroy()));
  await assert.rejects(fetchLimited(`${s.url}/silent`, { ...opts, timeoutMs: 50 }), (err: unknown) => {
    return isResult('timeout')(err) && /within 50 ms/.test((err as Error).message);
  });
  await assert.rejects(fetchLimited(`${s.url}/partial`, { ...opts, timeoutMs: 50 }), isResult('timeout'));
});

test('a refused connection is a network error', async () => {
  const s = await listen(() => {});
  await s.close();
  await assert.rejects(fetchLimited(`${s.url}/`, opts), (err: unknown) => {
    return isResult('error')(err) && (err as PollRequestError).countsAgainstHealth;
  });
});

test('a connection dropped before the response ends is a network error', async (t) => {
  const s = await server(t, (_req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('partial', () => res.socket?.destroy());
  });
  await assert.rejects(fetchLimited(`${s.url}/`, opts), isResult('error'));
});

test('aborting the signal cancels with PollCancelledError, before or during the request', async (t) => {
  let arrived!: () => void;
  const reached = new Promise<void>((resolve) => (arrived = resolve));
  const held: ServerResponse[] = [];
  const s = await server(t, (_req, res) => {
    held.push(res);
    arrived();
  });
  t.after(() => held.forEach((r) => r.destroy()));
  const pre = new AbortController();
  pre.abort();
  await assert.rejects(fetchLimited(`${s.url}/`, { ...opts, signal: pre.signal }), PollCancelledError);
  const during = new AbortController();
  const pending = fetchLimited(`${s.url}/`, { ...opts, signal: during.signal });
  await reached;
  during.abort();
  await assert.rejects(pending, PollCancelledError);
});
