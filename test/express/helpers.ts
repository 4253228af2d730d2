import { createHash } from 'node:crypto';
import { once } from 'node:events';
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import express, { type Express } from 'express';
import type { LeaseOutcome } from '../../src/core/lease.js';
import type { Router } from '../../src/router.js';

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export type WorkerHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>;

export interface TestWorker {
  name: string;
  url: string;
  port: number;
  seen: SeenRequest[];
  /** Closes the listener and destroys every open connection, like a crashed process. */
  kill(): Promise<void>;
}

export const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/** The default worker answers with what it received, so tests can check path, headers and body. */
export const echo: (name: string) => WorkerHandler = (name) => (req, res, body) => {
  const payload = JSON.stringify({
    worker: name,
    method: req.method,
    url: req.url,
    headers: req.headers,
    length: body.length,
    sha256: sha256(body),
  });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
};

/**
 * A real HTTP worker on 127.0.0.1:0 that reads the whole body, then runs `handler`; it answers the
 * router's own health polls without recording them. Closed after the test.
 */
export async function startWorker(
  t: TestContext,
  name: string,
  handler: WorkerHandler = echo(name),
): Promise<TestWorker> {
  const seen: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    if (req.url === '/health' && req.headers['user-agent'] === 'least-load-router') {
      res.end('ok'); // the router's health poll (engine 'none'), not a proxied request
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      void handler(req, res, body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  let killed: Promise<void> | undefined;
  const kill = (): Promise<void> => {
    killed ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return killed;
  };
  t.after(kill);
  return { name, url: `http://127.0.0.1:${port}`, port, seen, kill };
}

/** A URL nothing listens on: bind a port, then free it. */
export async function deadUrl(): Promise<string> {
  const server = http.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** An Express app on 127.0.0.1:0, set up by `setup`, closed after the test. */
export async function startApp(t: TestContext, setup: (app: Express) => void): Promise<string> {
  const app = express();
  setup(app);
  const server: Server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  json<T = Record<string, unknown>>(): T;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string | number>;
  body?: Buffer | string;
  /** Send the body with transfer-encoding: chunked instead of content-length. */
  chunked?: boolean;
}

/** One request on a fresh connection (no keep-alive), the whole response buffered. */
export function request(url: string, options: RequestOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const headers: Record<string, string | number> = { ...options.headers };
    if (body && !options.chunked) headers['content-length'] = body.length;
    const req = http.request(url, {
      method: options.method ?? (body ? 'POST' : 'GET'),
      headers,
      agent: false,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const data = Buffer.concat(chunks);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: data,
          json: <T>() => JSON.parse(data.toString('utf8')) as T,
        });
      });
    });
    if (body && options.chunked) {
      // Several writes so the body really goes out in chunks.
      const step = Math.max(1, Math.ceil(body.length / 4));
      for (let i = 0; i < body.length; i += step) req.write(body.subarray(i, i + step));
      req.end();
    } else {
      req.end(body);
    }
  });
}

export const postJson = (
  url: string,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> =>
  request(url, {
    body: JSON.stringify(payload),
    headers: { 'content-type': 'application/json', ...headers },
  });

/** Records every lease release of a router and lets a test await the n-th one. */
export class ReleaseLog {
  readonly outcomes: { worker: string; outcome: LeaseOutcome }[] = [];
  readonly #waiters: { n: number; resolve: () => void }[] = [];

  constructor(router: Router) {
    router.observe({
      onRelease: (lease, outcome) => {
        this.outcomes.push({ worker: lease.worker.id, outcome });
        for (const w of this.#waiters.filter((x) => this.outcomes.length >= x.n)) {
          this.#waiters.splice(this.#waiters.indexOf(w), 1);
          w.resolve();
        }
      },
    });
  }

  /** Resolves once at least `n` leases were released in total. */
  count(n: number): Promise<void> {
    if (this.outcomes.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ n, resolve }));
  }
}

/** A promise with its resolve function, for handing events between a worker and a test. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

export const totalInFlight = (router: Router): number =>
  router.workers().reduce((sum, w) => sum + w.inFlight, 0);
