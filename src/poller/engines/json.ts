import { aggregateRanks, type LoadSnapshot, type RankLoad } from '../../core/load-snapshot.js';
import type { LoadFieldPaths } from '../../core/worker.js';
import type { LoadSource, ReadContext } from '../engine.js';
import { LoadParseError } from '../errors.js';
import { okBody } from './http-status.js';
import { checkValue, isRecord, parseJson, type ValueKind } from './values.js';

export const DEFAULT_JSON_PATH = '/load';

type ValueField = Exclude<keyof LoadFieldPaths, 'ranks'>;

const KINDS: Readonly<Record<ValueField, ValueKind>> = {
  kvUsage: 'ratio',
  running: 'count',
  waiting: 'count',
  waitingTokens: 'count',
  throughput: 'rate',
  capacityTokens: 'count',
};

/** By default a server that answers with our own LoadSnapshot shape needs no field config. */
const DEFAULT_FIELDS: Readonly<LoadFieldPaths> = {
  kvUsage: 'kvUsage',
  running: 'running',
  waiting: 'waiting',
  waitingTokens: 'waitingTokens',
  throughput: 'throughput',
  capacityTokens: 'capacityTokens',
};

/** Follows a dot path through objects and arrays (numeric segments index arrays). */
export function lookupPath(doc: unknown, path: string): unknown {
  let current = doc;
  for (const segment of path.split('.')) {
    if (Array.isArray(current) && /^\d+$/.test(segment)) current = current[Number(segment)];
    else if (isRecord(current) && Object.hasOwn(current, segment)) current = current[segment];
    else return undefined;
  }
  return current;
}

/**
 * A generic JSON load endpoint, for in-house servers: GET `loadPath` and read each value from its
 * configured dot path. Configured fields replace the defaults entirely, so nothing is read by accident.
 */
export class JsonSource implements LoadSource {
  readonly engine = 'json' as const;
  readonly #path: string;
  readonly #fields: Readonly<LoadFieldPaths>;

  constructor(path: string | undefined, fields: Readonly<LoadFieldPaths> | undefined) {
    this.#path = path ?? DEFAULT_JSON_PATH;
    this.#fields = fields ?? DEFAULT_FIELDS;
  }

  async read(ctx: ReadContext): Promise<LoadSnapshot> {
    const body = okBody(await ctx.get(this.#path), this.#path);
    return this.parse(body, ctx.now());
  }

  parse(body: string, at: number): LoadSnapshot {
    const doc = parseJson(body, this.#path);
    const ranksPath = this.#fields.ranks;
    let entries: unknown[] = [doc];
    if (ranksPath !== undefined) {
      const list = lookupPath(doc, ranksPath);
      if (!Array.isArray(list) || list.length === 0) {
        throw new LoadParseError(`${this.#path}: ${ranksPath} is not a non-empty array`);
      }
      entries = list;
    }
    let found = false;
    const ranks = entries.map((entry, i): RankLoad => {
      const rank: RankLoad = { rank: i };
      for (const field of Object.keys(KINDS) as ValueField[]) {
        const path = this.#fields[field];
        if (path === undefined) continue;
        const where = ranksPath === undefined ? path : `${ranksPath}.${i}.${path}`;
        const value = checkValue(lookupPath(entry, path), KINDS[field], where);
        if (value === undefined) continue;
        rank[field] = value;
        found = true;
      }
      return rank;
    });
    if (!found) throw new LoadParseError(`${this.#path}: none of the configured load fields is present`);
    return aggregateRanks(ranks, at);
  }
}
