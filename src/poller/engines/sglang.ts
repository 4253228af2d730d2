import { aggregateRanks, type LoadSnapshot, type RankLoad } from '../../core/load-snapshot.js';
import type { LoadSource, ReadContext } from '../engine.js';
import { LoadParseError, PollRequestError, PrometheusParseError } from '../errors.js';
import { parsePrometheusText } from '../prometheus-text.js';
import { isAbsent, okBody } from './http-status.js';
import { requireSome } from './metrics-endpoint.js';
import { promNames, readPromFields, toRanks, type Labels, type PromField } from './prom-fields.js';
import { checkValue, isRecord, parseJson } from './values.js';

type Mode = 'loads' | 'metrics' | 'get_load';

/** Best first: /v1/loads has per-rank detail; /metrics needs --enable-metrics; /get_load is legacy. */
const MODES: readonly Mode[] = ['loads', 'metrics', 'get_load'];
const PATHS: Readonly<Record<Mode, string>> = {
  loads: '/v1/loads?include=core',
  metrics: '/metrics',
  get_load: '/get_load',
};

// Some scrape pipelines rewrite `sglang:` to `sglang_`; accept both spellings.
const both = (name: string): string[] => [`sglang:${name}`, `sglang_${name}`];
const METRIC_FIELDS = {
  kvUsage: { names: both('token_usage'), kind: 'ratio', required: true },
  running: { names: both('num_running_reqs'), kind: 'count', required: true },
  waiting: { names: both('num_queue_reqs'), kind: 'count', required: true },
  throughput: { names: both('gen_throughput'), kind: 'rate' },
  capacityTokens: { names: both('max_total_num_tokens'), kind: 'count' },
} as const satisfies Record<string, PromField>;
const METRIC_NAMES = promNames(METRIC_FIELDS);

// Series differing only in tp_rank/pp_rank/moe_ep_rank repeat one value; only dp_rank splits load.
const rankOf = (labels: Labels): string => labels.dp_rank ?? '0';

/** SGLang's gen_throughput holds its last value when the server goes idle; idle means 0. */
function idleAware(running: number | undefined, throughput: number | undefined): number | undefined {
  return running === 0 && throughput !== undefined ? 0 : throughput;
}

function rankEntries(doc: unknown, what: string): Record<string, unknown>[] {
  const list = Array.isArray(doc) ? doc : isRecord(doc) ? doc.loads : undefined;
  if (!Array.isArray(list) || list.length === 0) throw new LoadParseError(`${what} has no per-rank loads`);
  return list.map((entry, i) => {
    if (!isRecord(entry)) throw new LoadParseError(`${what} rank ${i} is not an object`);
    return entry;
  });
}

function rankNumber(entry: Record<string, unknown>, index: number): number {
  const dp = entry.dp_rank;
  return typeof dp === 'number' && Number.isInteger(dp) && dp >= 0 ? dp : index;
}

/** `GET /v1/loads`: the current envelope and the early-2026 one (`dp_rank_count`, `aggregate`). */
export function parseSglangLoads(body: string, at: number): LoadSnapshot {
  const ranks = rankEntries(parseJson(body, '/v1/loads'), '/v1/loads').map((e, i): RankLoad => {
    const field = (name: string) => `loads[${i}].${name}`;
    const running = checkValue(e.num_running_reqs, 'count', field('num_running_reqs'));
    const rank: RankLoad = { rank: rankNumber(e, i) };
    const values = {
      kvUsage: checkValue(e.token_usage, 'ratio', field('token_usage')),
      running,
      waiting: checkValue(e.num_waiting_reqs, 'count', field('num_waiting_reqs')),
      waitingTokens: checkValue(e.num_waiting_uncached_tokens, 'count', field('num_waiting_uncached_tokens')),
      throughput: idleAware(running, checkValue(e.gen_throughput, 'rate', field('gen_throughput'))),
      capacityTokens: checkValue(e.max_total_num_tokens, 'count', field('max_total_num_tokens')),
    };
    for (const [k, v] of Object.entries(values) as [keyof typeof values, number | undefined][]) {
      if (v !== undefined) rank[k] = v;
    }
    return rank;
  });
  return aggregateRanks(ranks, at);
}

/** Legacy `GET /get_load`: `num_reqs` counts running and waiting together; no usage ratio. */
export function parseSglangGetLoad(body: string, at: number): LoadSnapshot {
  const ranks = rankEntries(parseJson(body, '/get_load'), '/get_load').map((e, i): RankLoad => {
    const total = checkValue(e.num_reqs, 'count', `[${i}].num_reqs`);
    const waiting = checkValue(e.num_waiting_reqs, 'count', `[${i}].num_waiting_reqs`);
    const rank: RankLoad = { rank: rankNumber(e, i) };
    if (waiting !== undefined) rank.waiting = waiting;
    if (total !== undefined && waiting !== undefined) {
      if (total < waiting) throw new LoadParseError(`[${i}].num_reqs ${total} < num_waiting_reqs ${waiting}`);
      rank.running = total - waiting;
    }
    return rank;
  });
  return aggregateRanks(ranks, at);
}

/** SGLang `/metrics` (`sglang:` or `sglang_` names). */
export function parseSglangMetrics(body: string, at: number): LoadSnapshot {
  const doc = parsePrometheusText(body, { only: (name) => METRIC_NAMES.has(name) });
  const perKey = readPromFields(doc, METRIC_FIELDS, rankOf);
  requireSome(perKey, ['kvUsage', 'running', 'waiting'], METRIC_FIELDS);
  const ranks = toRanks(perKey, 'SGLang', (v) => ({ ...v, throughput: idleAware(v.running, v.throughput) }));
  return aggregateRanks(ranks, at);
}

const PARSERS: Readonly<Record<Mode, (body: string, at: number) => LoadSnapshot>> = {
  loads: parseSglangLoads,
  metrics: parseSglangMetrics,
  get_load: parseSglangGetLoad,
};

/**
 * SGLang: tries /v1/loads, then /metrics, then /get_load, and remembers the first that answers
 * usefully, so later polls cost one request. An endpoint that answers something we cannot read
 * (a newer envelope) is skipped while probing; a remembered one that disappears or stops parsing
 * (an upgrade) fails that poll and is probed afresh on the next.
 */
export class SglangSource implements LoadSource {
  readonly engine = 'sglang' as const;
  #mode: Mode | undefined;

  async read(ctx: ReadContext): Promise<LoadSnapshot> {
    const remembered = this.#mode;
    const order = remembered === undefined ? MODES : [remembered, ...MODES.filter((m) => m !== remembered)];
    let lastStatus = 0;
    let parseError: unknown;
    for (const mode of order) {
      const res = await ctx.get(PATHS[mode]);
      if (isAbsent(res.status)) {
        lastStatus = res.status;
        if (this.#mode === mode) this.#mode = undefined;
        continue;
      }
      const body = okBody(res, PATHS[mode]);
      try {
        const snapshot = PARSERS[mode](body, ctx.now());
        this.#mode = mode;
        return snapshot;
      } catch (err) {
        if (!(err instanceof LoadParseError || err instanceof PrometheusParseError)) throw err;
        if (mode === remembered) {
          this.#mode = undefined;
          throw err;
        }
        parseError ??= err;
      }
    }
    if (parseError !== undefined) throw parseError;
    throw new PollRequestError('http_error', `none of ${MODES.map((m) => PATHS[m]).join(', ')} is served`, {
      status: lastStatus,
    });
  }
}
