import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Worker } from '../../src/core/worker.js';
import type { PollResult, Router } from '../../src/router.js';

const FIXTURES = new URL('../fixtures/', import.meta.url);

export function fixture(name: string): string {
  return readFileSync(new URL(name, FIXTURES), 'utf8');
}

export interface TestServer {
  port: number;
  url: string;
  server: http.Server;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (port 0 = any free one); close() also drops keep-alive connections. */
export async function listen(handler: http.RequestListener, port = 0): Promise<TestServer> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  let closed = false;
  return {
    port: actual,
    url: `http://127.0.0.1:${actual}`,
    server,
    close: () => {
      if (closed) return Promise.resolve();
      closed = true;
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

export type Route =
  string | { status: number; body?: string } | (() => string | { status: number; body?: string });

/** A handler serving fixed bodies by path (query included); unknown paths get 404. */
export function routes(table: Record<string, Route>): http.RequestListener {
  return (req, res) => {
    const route = table[req.url ?? ''];
    const answer = typeof route === 'function' ? route() : route;
    if (answer === undefined) {
      res.writeHead(404).end('not found');
    } else if (typeof answer === 'string') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(answer);
    } else {
      res.writeHead(answer.status).end(answer.body ?? '');
    }
  };
}

/**
 * Resolves with the first poll report matching `match`; rejects after `timeoutMs` so a broken
 * test fails instead of hanging (the timer is cleared as soon as the event arrives).
 */
export function nextPoll(
  router: Router,
  match: (worker: Worker, result: PollResult) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<{ worker: Worker; result: PollResult; seconds: number }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unobserve();
      reject(new Error(`no matching poll within ${timeoutMs} ms`));
    }, timeoutMs);
    const unobserve = router.observe({
      onPoll: (worker, result, seconds) => {
        if (!match(worker, result)) return;
        clearTimeout(timer);
        unobserve();
        resolve({ worker, result, seconds });
      },
    });
  });
}

/** Resolves when `worker` turns `healthy` (at once if it already is), with the reason. */
export function healthBecomes(
  router: Router,
  worker: Worker,
  healthy: boolean,
  timeoutMs = 10_000,
): Promise<string> {
  if (worker.healthy === healthy) return Promise.resolve('already');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unobserve();
      reject(
        new Error(`${worker.id} did not turn ${healthy ? 'healthy' : 'unhealthy'} within ${timeoutMs} ms`),
      );
    }, timeoutMs);
    const unobserve = router.observe({
      onHealthChange: (w, h, reason) => {
        if (w !== worker || h !== healthy) return;
        clearTimeout(timer);
        unobserve();
        resolve(reason);
      },
    });
  });
}

/** Counts polls per result for one worker until `done` says stop. */
export function collectPolls(router: Router, worker: Worker): { results: PollResult[]; stop: () => void } {
  const results: PollResult[] = [];
  const stop = router.observe({ onPoll: (w, r) => w === worker && results.push(r) });
  return { results, stop };
}
