import type { RankLoad } from '../../core/load-snapshot.js';
import { LoadParseError } from '../errors.js';
import type { PromDocument } from '../prometheus-text.js';
import { checkValue, type ValueKind } from './values.js';

export interface PromField {
  /** Candidate sample names; the first one present wins (current name before the old one). */
  names: readonly string[];
  /** Keep only series with these label values (Triton puts several gauges in one family). */
  where?: Readonly<Record<string, string>>;
  kind: ValueKind;
  /** NaN in this field is a broken exporter (parse error); elsewhere NaN just means not reported. */
  required?: boolean;
}

export type Labels = Readonly<Record<string, string>>;

/** Every sample name the fields may read, for parsePrometheusText's `only` filter. */
export function promNames(fields: Readonly<Record<string, PromField>>): Set<string> {
  const names = new Set<string>();
  for (const field of Object.values(fields)) for (const name of field.names) names.add(name);
  return names;
}

function matches(labels: Labels, where: Readonly<Record<string, string>> | undefined): boolean {
  if (where === undefined) return true;
  for (const key in where) if (labels[key] !== where[key]) return false;
  return true;
}

/**
 * Each field's value per rank key (`rankOf` picks the data-parallel label). Several series of one
 * field in one rank (SGLang repeats each value on every tp/pp/moe_ep rank) hold one value, so the
 * largest is kept instead of summing copies.
 */
export function readPromFields<K extends string>(
  doc: PromDocument,
  fields: Readonly<Record<K, PromField>>,
  rankOf: (labels: Labels) => string,
): Map<string, Partial<Record<K, number>>> {
  const ranks = new Map<string, Partial<Record<K, number>>>();
  for (const field of Object.keys(fields) as K[]) {
    const spec = fields[field];
    for (const name of spec.names) {
      const samples = doc.get(name).filter((s) => matches(s.labels, spec.where));
      if (samples.length === 0) continue;
      for (const sample of samples) {
        if (Number.isNaN(sample.value)) {
          if (spec.required) throw new LoadParseError(`${name} is NaN`);
          continue;
        }
        const value = checkValue(sample.value, spec.kind, name) as number;
        const key = rankOf(sample.labels);
        let entry = ranks.get(key);
        if (entry === undefined) ranks.set(key, (entry = {}));
        const seen = entry[field];
        if (seen === undefined || value > seen) entry[field] = value;
      }
      break;
    }
  }
  return ranks;
}

/**
 * Numbers rank keys: the keys themselves when they are all integers (`engine="1"`, `dp_rank="1"`),
 * else their order (Triton keys ranks by model name).
 */
export function rankNumbers(keys: Iterable<string>): Map<string, number> {
  const list = [...keys];
  const numeric = list.every((k) => /^\d{1,9}$/.test(k));
  const sorted = numeric ? list.sort((a, b) => Number(a) - Number(b)) : list.sort();
  return new Map(sorted.map((k, i) => [k, numeric ? Number(k) : i]));
}

/** Turns per-key values into RankLoads in rank order; throws when the engine reported nothing. */
export function toRanks<K extends string>(
  perKey: ReadonlyMap<string, Partial<Record<K, number>>>,
  engine: string,
  build: (values: Partial<Record<K, number>>, key: string) => Omit<RankLoad, 'rank'>,
): RankLoad[] {
  if (perKey.size === 0) throw new LoadParseError(`no ${engine} load metrics in the response`);
  const numbers = rankNumbers(perKey.keys());
  const ranks: RankLoad[] = [];
  for (const [key, rank] of numbers) {
    const load = build(perKey.get(key) ?? {}, key);
    const out: RankLoad = { rank };
    for (const [field, value] of Object.entries(load) as [keyof RankLoad, number | undefined][]) {
      if (value !== undefined) out[field] = value;
    }
    ranks.push(out);
  }
  return ranks;
}
