import type { IncomingMessage } from 'node:http';
import { LlrError } from '../core/errors.js';
import { BodyConsumedError, BodyTooLargeError } from './errors.js';

export const EMPTY_BODY: Buffer = Buffer.alloc(0);

/** The client went away while we were still reading its body; nobody is left to answer. */
export class ClientGoneError extends LlrError {
  constructor() {
    super('LLR_CLIENT_GONE', 'the client closed the connection before its request body arrived');
  }
}

/** True when the request carries a body at all (RFC 9112 section 6.3). */
export function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

/** The declared length, or undefined for chunked bodies, whose length is known only at the end. */
export function declaredLength(req: IncomingMessage): number | undefined {
  if (req.headers['transfer-encoding'] !== undefined) return undefined;
  const length = req.headers['content-length'];
  return length === undefined ? 0 : Number(length);
}

/**
 * True when something before us (express.json() and friends) already read the request stream,
 * the same test body-parser itself uses to skip an already-parsed request.
 */
export function bodyConsumed(req: IncomingMessage): boolean {
  return req.readableEnded || (req.complete && !req.readable);
}

/** Reads the whole body, failing with BodyTooLargeError past `limit` bytes and ClientGoneError on abort. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limit) return Promise.reject(new BodyTooLargeError(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onGone);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        // Stop buffering but keep draining: the 413 goes out with `connection: close`.
        req.resume();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onGone = (): void => {
      cleanup();
      reject(new ClientGoneError());
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('close', onGone);
  });
}

const isFlatRecord = (v: unknown): v is Record<string, string> =>
  typeof v === 'object' &&
  v !== null &&
  Object.values(v).every((x) => typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean');

/**
 * Turns a body an earlier parser left in `req.body` back into bytes. The bytes may differ from what
 * the client sent (whitespace, decompression), so the caller must replace content-length and drop
 * content-encoding.
 */
export function reserializeBody(req: IncomingMessage & { body?: unknown }): Buffer {
  const body = req.body;
  if (body === undefined || body === null) return EMPTY_BODY;
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === 'string') return Buffer.from(body);
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  if (type.includes('json')) return Buffer.from(JSON.stringify(body));
  if (type.includes('application/x-www-form-urlencoded') && isFlatRecord(body)) {
    const pairs = Object.entries(body).map(([k, v]): [string, string] => [k, String(v)]);
    return Buffer.from(new URLSearchParams(pairs).toString());
  }
  throw new BodyConsumedError(
    `cannot re-serialize a parsed ${type || 'untyped'} body; mount the router first`,
  );
}
