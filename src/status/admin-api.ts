import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { workerSpecSchema } from '../config/schema.js';
import { parseOrThrow } from '../config/validate.js';
import { LlrError } from '../core/errors.js';
import type { Router } from '../router.js';

export interface AdminApiOptions {
  token: string;
  /** Largest accepted request body. */
  maxBodyBytes?: number;
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/** Constant-time bearer check: hashing first makes both sides the same length, whatever was sent. */
function authorized(req: IncomingMessage, expected: Buffer): boolean {
  const header = req.headers.authorization ?? '';
  const match = /^Bearer\s+(.+)$/i.exec(header);
  return timingSafeEqual(digest(match?.[1] ?? ''), expected) && match !== null;
}

function reply(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(`${JSON.stringify(body)}\n`);
}

const problem = (code: string, message: string) => ({ error: { code, message } });

async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new LlrError('LLR_BODY_TOO_LARGE', `request body over ${limit} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new LlrError('LLR_BAD_REQUEST', 'request body is not valid JSON');
  }
}

const STATUS_BY_CODE: Record<string, number> = {
  LLR_CONFIG: 400,
  LLR_BAD_REQUEST: 400,
  LLR_INVALID_WORKER_URL: 400,
  LLR_BODY_TOO_LARGE: 413,
  LLR_DUPLICATE_WORKER: 409,
  LLR_UNKNOWN_WORKER: 404,
};

/**
 * `POST /workers {url, engine}` and `DELETE /workers/{id}`, behind a bearer token. Returns false
 * for requests it does not own (so GET /workers stays public on the same port).
 */
export function adminRequestHandler(router: Router, options: AdminApiOptions) {
  const expected = digest(options.token);
  const limit = options.maxBodyBytes ?? 64 * 1024;
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const isCreate = req.method === 'POST' && path === '/workers';
    const isDelete = req.method === 'DELETE' && path.startsWith('/workers/');
    if (!isCreate && !isDelete) return false;
    if (!authorized(req, expected)) {
      reply(res, 401, problem('LLR_UNAUTHORIZED', 'a valid bearer token is required'), {
        'www-authenticate': 'Bearer realm="least-load-router"',
      });
      return true;
    }
    try {
      if (isCreate) {
        const spec = parseOrThrow(workerSpecSchema, await readJson(req, limit));
        const worker = router.addWorker(spec);
        reply(
          res,
          201,
          router.workers().find((w) => w.id === worker.id),
        );
      } else {
        const id = decodeURIComponent(path.slice('/workers/'.length));
        const worker = router.removeWorker(id);
        reply(res, 202, { id: worker.id, draining: true, inFlight: worker.inFlight });
      }
    } catch (err) {
      const code = err instanceof LlrError ? err.code : 'LLR_INTERNAL';
      reply(res, STATUS_BY_CODE[code] ?? 500, problem(code, (err as Error).message));
    }
    return true;
  };
}
