import type { RequestContext } from '../policies/policy.js';
import type { HeaderMap, HeaderValue } from './messages.js';

/**
 * A header's value as a string. Envoy 1.27+ sends `raw_value` bytes, older versions `value`; the
 * bytes are read as latin1, as Node's own HTTP parser does, so a policy keyed on a header sees the
 * same string behind Envoy as behind the Express front door.
 */
export function headerValue(h: HeaderValue): string {
  const raw = h.raw_value;
  if (raw !== undefined && raw.length > 0)
    return Buffer.from(raw.buffer, raw.byteOffset, raw.length).toString('latin1');
  return h.value ?? '';
}

/** Finds one header (lower-case name) in a HeaderMap; the first value wins. */
export function findHeader(map: HeaderMap | undefined, name: string): string | undefined {
  const list = map?.headers;
  if (!list) return undefined;
  for (const h of list) if (h.key === name || h.key?.toLowerCase() === name) return headerValue(h);
  return undefined;
}

/**
 * The policy's view of a request from Envoy's request_headers: pseudo-headers become method,
 * path and authority; other headers go into `headers` (lower-case names, repeated ones joined
 * with ", "). `untrusted` (our own destination header) is dropped: a client must not be able to
 * steer the pick with it.
 */
export function contextFromHeaders(map: HeaderMap | undefined, untrusted: string): RequestContext {
  const headers: Record<string, string> = {};
  let method: string | undefined;
  let path: string | undefined;
  let authority: string | undefined;
  for (const h of map?.headers ?? []) {
    const key = h.key?.toLowerCase();
    if (!key) continue;
    const value = headerValue(h);
    if (key.charCodeAt(0) === 58 /* ':' */) {
      if (key === ':method') method = value;
      else if (key === ':path') path = value;
      else if (key === ':authority') authority = value;
      continue;
    }
    if (key === untrusted) continue;
    const prior = headers[key];
    headers[key] = prior === undefined ? value : `${prior}, ${value}`;
  }
  authority ??= headers.host;
  const ctx: RequestContext = { headers };
  if (method !== undefined) ctx.method = method;
  if (path !== undefined) ctx.path = path;
  if (authority !== undefined) ctx.authority = authority;
  return ctx;
}
