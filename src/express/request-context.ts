import type { IncomingMessage } from 'node:http';
import { bodyFields } from '../policies/body-fields.js';
import type { RequestContext } from '../policies/policy.js';

/**
 * What the policy sees. `path` is the original URL (mount path and query included), the way Envoy
 * reports `:path`. Node already lower-cases header names; duplicate request headers arrive joined,
 * so the values are strings (set-cookie, the one array, is a response header).
 */
export function requestContext(
  req: IncomingMessage & { originalUrl?: string },
  parsedBody?: unknown,
): RequestContext {
  const ctx: RequestContext = {
    method: req.method,
    path: req.originalUrl ?? req.url,
    authority: req.headers.host,
    headers: req.headers as Readonly<Record<string, string | undefined>>,
  };
  return parsedBody === undefined ? ctx : Object.assign(ctx, bodyFields(parsedBody));
}
