import http from 'node:http';
import https from 'node:https';
import { PollCancelledError, PollRequestError } from './errors.js';

export interface LimitedResponse {
  status: number;
  body: string;
}

export interface FetchLimitedOptions {
  /** Whole request, connect to last body byte. */
  timeoutMs: number;
  /** A larger body fails the request with `too_large` as soon as it is seen, never buffered whole. */
  maxBytes: number;
  headers?: Record<string, string>;
  /** Aborting it cancels the request with PollCancelledError. */
  signal?: AbortSignal;
  /** Connection pool to use; the poller owns one so stop() can close every socket. */
  agent?: http.Agent;
}

/**
 * GET with a deadline and a response-size cap. Built on node:http rather than fetch so the caller
 * owns the sockets (fetch's shared pool would outlive router.stop()) and so an oversized body is
 * cut off mid-stream. Rejects only with PollRequestError or PollCancelledError; any status resolves.
 */
export function fetchLimited(url: string | URL, options: FetchLimitedOptions): Promise<LimitedResponse> {
  return new Promise((resolve, reject) => {
    const target = typeof url === 'string' ? new URL(url) : url;
    const controller = new AbortController();
    const outer = options.signal;
    let settled = false;

    const timer = setTimeout(() => {
      controller.abort(new PollRequestError('timeout', `no complete answer within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    const onOuterAbort = (): void => controller.abort(new PollCancelledError());

    const finish = (err: Error | undefined, res?: LimitedResponse): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuterAbort);
      if (err) reject(err);
      else resolve(res as LimitedResponse);
    };
    const fail = (cause: unknown): void => {
      if (controller.signal.aborted) {
        finish(controller.signal.reason as Error);
        return;
      }
      const message = cause instanceof Error ? cause.message : String(cause);
      finish(new PollRequestError('error', message, { cause }));
    };
    const tooLarge = (req: http.ClientRequest, size: number): void => {
      finish(new PollRequestError('too_large', `response of ${size} bytes exceeds ${options.maxBytes}`));
      req.destroy();
    };

    if (outer?.aborted) {
      finish(new PollCancelledError());
      return;
    }
    outer?.addEventListener('abort', onOuterAbort, { once: true });

    let req: http.ClientRequest;
    try {
      const request = target.protocol === 'https:' ? https.request : http.request;
      req = request(target, {
        method: 'GET',
        headers: { accept: '*/*', 'user-agent': 'least-load-router', ...options.headers },
        agent: options.agent,
        signal: controller.signal,
      });
    } catch (err) {
      fail(err);
      return;
    }
    req.on('error', fail);
    req.on('response', (res) => {
      const declared = Number(res.headers['content-length']);
      if (declared > options.maxBytes) {
        tooLarge(req, declared);
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        size += chunk.length;
        if (size > options.maxBytes) tooLarge(req, size);
        else chunks.push(chunk);
      });
      res.on('end', () =>
        finish(undefined, {
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks, size).toString('utf8'),
        }),
      );
      res.on('error', fail);
      res.on('close', () => fail(new Error('connection closed before the response ended')));
    });
    req.end();
  });
}
