import type { EngineCounters, EngineState } from './engine-model.js';

/** One data-parallel rank's numbers, as both report formats need them. */
export interface RankReport {
  rank: number;
  state: EngineState;
  counters: EngineCounters;
  genThroughput: number;
  maxBatchSize: number;
  /** Whether the rank runs a prefix cache (vLLM's enable_prefix_caching). */
  prefixCaching?: boolean;
  /** Cached tokens no running request references: free, but still holding reusable prefixes. */
  idleCachedTokens?: number;
}

export interface SglangMeta {
  version: string;
  accelerator: string;
  numAccelerators: number;
}

const round4 = (x: number) => Math.round(x * 10000) / 10000;

/** Cumulative prefix-cache hit rate (hit tokens / queried tokens), 0 before any query. */
function hitRate(r: RankReport): number {
  const q = r.counters.prefixQueryTokens;
  return q > 0 ? r.counters.prefixHitTokens / q : 0;
}

/**
 * SGLang `GET /v1/loads`, current envelope (no `dp_rank_count`, no `aggregate`): one entry per
 * DP rank. `num_used_tokens` is KV referenced by running requests (what token_usage divides), and
 * `num_total_tokens` adds the idle radix-cache tokens; `cache_hit_rate` is cumulative here.
 */
export function sglangLoads(ranks: readonly RankReport[], meta: SglangMeta, now = new Date()): object {
  return {
    timestamp: now.toISOString().replace('Z', '+00:00'),
    version: meta.version,
    accelerator: meta.accelerator,
    num_accelerators: meta.numAccelerators,
    loads: ranks.map((r) => ({
      dp_rank: r.rank,
      num_running_reqs: r.state.running,
      num_waiting_reqs: r.state.waiting,
      num_waiting_uncached_tokens: r.state.waitingTokens,
      num_used_tokens: r.state.kvTokens,
      num_total_tokens: r.state.kvTokens + (r.idleCachedTokens ?? 0),
      max_total_num_tokens: r.state.kvCapacityTokens,
      max_running_requests: r.maxBatchSize,
      token_usage: round4(r.state.kvUsage),
      gen_throughput: Math.round(r.genThroughput * 100) / 100,
      cache_hit_rate: round4(hitRate(r)),
      utilization: 0,
      queues: { waiting: r.state.waiting, grammar: 0, paused: 0, retracted: 0, prealloc_ready: 0 },
    })),
  };
}

/** Python's prometheus_client prints floats: integers as `37.0`, others in shortest repr. */
function pyFloat(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return x.toFixed(1);
  return String(x).replace(
    /e([+-]?)(\d+)$/,
    (_, sign: string, d: string) => `e${sign || '+'}${d.padStart(2, '0')}`,
  );
}

interface Family {
  name: string;
  help: string;
  type: 'gauge' | 'counter';
  value: (r: RankReport) => number;
}

const FAMILIES: readonly Family[] = [
  {
    name: 'vllm:num_requests_running',
    help: 'Number of requests in model execution batches.',
    type: 'gauge',
    value: (r) => r.state.running,
  },
  {
    name: 'vllm:num_requests_waiting',
    help: 'Number of requests waiting to be processed.',
    type: 'gauge',
    value: (r) => r.state.waiting,
  },
  {
    name: 'vllm:kv_cache_usage_perc',
    help: 'KV-cache usage. 1 means 100 percent usage.',
    type: 'gauge',
    value: (r) => r.state.kvUsage,
  },
  {
    name: 'vllm:num_preemptions',
    help: 'Cumulative number of preemption from the engine.',
    type: 'counter',
    value: (r) => r.counters.preemptions,
  },
  {
    name: 'vllm:prompt_tokens',
    help: 'Number of prefill tokens processed.',
    type: 'counter',
    value: (r) => r.counters.promptTokens,
  },
  {
    name: 'vllm:generation_tokens',
    help: 'Number of generation tokens processed.',
    type: 'counter',
    value: (r) => r.counters.generatedTokens,
  },
  {
    name: 'vllm:prefix_cache_queries',
    help: 'Prefix cache queries, in terms of number of queried tokens.',
    type: 'counter',
    value: (r) => r.counters.prefixQueryTokens,
  },
  {
    name: 'vllm:prefix_cache_hits',
    help: 'Prefix cache hits, in terms of number of cached tokens.',
    type: 'counter',
    value: (r) => r.counters.prefixHitTokens,
  },
];

/**
 * vLLM (V1, >= 0.10) `GET /metrics`: one series per DP engine (`engine` label), counters with the
 * `_total` and `_created` samples prometheus_client writes. `kv_cache_usage_perc` is a 0..1
 * fraction despite its name, as in vLLM.
 *
 * `counterScale` (1 / speedup) keeps rates honest under time compression: a scraper divides
 * counter deltas by wall seconds, so counters are reported per wall second to make the derived
 * rate come out in model units, like SGLang's gen_throughput gauge. At speedup 1 it changes nothing.
 */
export function vllmMetrics(
  ranks: readonly RankReport[],
  modelName: string,
  createdSec: number,
  counterScale = 1,
): string {
  const lines: string[] = [];
  const labels = (r: RankReport) => `{engine="${r.rank}",model_name="${modelName}"}`;
  for (const f of FAMILIES) {
    const full = f.type === 'counter' ? `${f.name}_total` : f.name;
    lines.push(`# HELP ${full} ${f.help}`, `# TYPE ${full} ${f.type}`);
    const scale = f.type === 'counter' ? counterScale : 1;
    for (const r of ranks) lines.push(`${full}${labels(r)} ${pyFloat(f.value(r) * scale)}`);
    if (f.type === 'counter') {
      for (const r of ranks) lines.push(`${f.name}_created${labels(r)} ${pyFloat(createdSec)}`);
    }
  }
  lines.push(
    '# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig',
    '# TYPE vllm:cache_config_info gauge',
  );
  for (const r of ranks) {
    const blocks = Math.floor(r.state.kvCapacityTokens / 16);
    lines.push(
      `vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="${r.prefixCaching ? 'True' : 'False'}",engine="${r.rank}",num_gpu_blocks="${blocks}"} 1.0`,
    );
  }
  return `${lines.join('\n')}\n`;
}
