import { bodyFields, parseJsonBody } from '../policies/body-fields.js';
import type { RequestContext } from '../policies/policy.js';

/**
 * Adds what a body-aware policy reads (model, prompt, promptTokens) from a buffered request body.
 * The parsing is the Express front door's own, so a prefix or cache-aware policy sees the same
 * context for the same request behind either front door. A body that is not JSON, or JSON of
 * another shape, leaves the context as it was: the request is still routed, without those hints.
 */
export function contextWithBody(ctx: RequestContext, body: Uint8Array | undefined): RequestContext {
  if (!body || body.length === 0) return ctx;
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.length);
  const fields = bodyFields(parseJsonBody(bytes, ctx.headers?.['content-type']));
  if (Object.keys(fields).length === 0) return ctx;
  return { ...ctx, ...fields };
}
