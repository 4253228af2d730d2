import type { ReadContext } from '../engine.js';
import { parsePrometheusText, type PromDocument } from '../prometheus-text.js';
import { okBody } from './http-status.js';
import { LoadParseError } from '../errors.js';
import type { PromField } from './prom-fields.js';

export const METRICS_PATH = '/metrics';

/** GETs /metrics and parses only the named samples; returns the document and when it arrived. */
export async function fetchMetrics(
  ctx: ReadContext,
  names: ReadonlySet<string>,
): Promise<{ doc: PromDocument; at: number }> {
  const body = okBody(await ctx.get(METRICS_PATH), METRICS_PATH);
  const at = ctx.now();
  return { doc: parsePrometheusText(body, { only: (name) => names.has(name) }), at };
}

/** Throws unless some rank reported at least one of `fields`: a /metrics page of another engine. */
export function requireSome<K extends string>(
  perKey: ReadonlyMap<string, Partial<Record<K, number>>>,
  fields: readonly K[],
  spec: Readonly<Record<K, PromField>>,
): void {
  for (const values of perKey.values()) for (const f of fields) if (values[f] !== undefined) return;
  const expected = fields.map((f) => spec[f].names[0]).join(', ');
  throw new LoadParseError(`none of ${expected} in the response`);
}
