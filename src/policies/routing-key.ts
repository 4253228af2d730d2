import type { RequestContext } from './policy.js';

/** Headers tried, in order, when the front door gave no explicit routing key. */
export const DEFAULT_ROUTING_KEY_HEADERS: readonly string[] = ['x-session-id', 'x-routing-key'];

/**
 * Builds the routing-key reader shared by consistent_hashing and manual: `ctx.routingKey`, else the
 * first non-empty header of `headers`, else `authorization` (so one API key's traffic stays
 * together, as in SGLang's router), else undefined. Header names are lower-cased once here because
 * front doors hand headers over lower-cased.
 */
export function routingKeyReader(headers: readonly string[]): (ctx: RequestContext) => string | undefined {
  const names = [...headers.map((h) => h.toLowerCase()), 'authorization'];
  return (ctx) => {
    if (ctx.routingKey) return ctx.routingKey;
    const h = ctx.headers;
    if (h === undefined) return undefined;
    for (let i = 0; i < names.length; i++) {
      const v = h[names[i] as string];
      if (v) return v;
    }
    return undefined;
  };
}
