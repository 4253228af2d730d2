import { aggregateRanks, type LoadSnapshot } from '../../core/load-snapshot.js';
import type { LoadSource, ReadContext } from '../engine.js';
import type { PromDocument } from '../prometheus-text.js';
import { CounterRate } from './counter-rate.js';
import { fetchMetrics, requireSome } from './metrics-endpoint.js';
import { promNames, readPromFields, toRanks, type Labels, type PromField } from './prom-fields.js';

const FIELDS = {
  // A 0..1 fraction despite the name; gpu_cache_usage_perc is the pre-0.10 name of the same gauge.
  kvUsage: {
    names: ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'],
    kind: 'ratio',
    required: true,
  },
  running: { names: ['vllm:num_requests_running'], kind: 'count', required: true },
  waiting: { names: ['vllm:num_requests_waiting'], kind: 'count', required: true },
  generated: { names: ['vllm:generation_tokens_total'], kind: 'count' },
} as const satisfies Record<string, PromField>;

const CACHE_INFO = 'vllm:cache_config_info';
const NAMES = new Set([...promNames(FIELDS), CACHE_INFO]);

// The `engine` label is vLLM's data-parallel rank; older single-engine servers have none.
const rankOf = (labels: Labels): string => labels.engine ?? '0';

/** KV capacity per rank from the cache_config_info labels (blocks x tokens per block). */
function capacities(doc: PromDocument): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of doc.get(CACHE_INFO)) {
    const blocks = Number(s.labels.num_gpu_blocks);
    const blockSize = Number(s.labels.block_size);
    if (Number.isFinite(blocks) && Number.isFinite(blockSize) && blocks > 0 && blockSize > 0) {
      out.set(rankOf(s.labels), blocks * blockSize);
    }
  }
  return out;
}

/**
 * vLLM `GET /metrics`: one series per data-parallel engine; usage averaged, counts summed.
 * Throughput is the change of vllm:generation_tokens_total between polls, since vLLM exports no
 * throughput gauge.
 */
export class VllmSource implements LoadSource {
  readonly engine = 'vllm' as const;
  readonly #rate = new CounterRate();

  async read(ctx: ReadContext): Promise<LoadSnapshot> {
    const { doc, at } = await fetchMetrics(ctx, NAMES);
    return this.fromDocument(doc, at);
  }

  fromDocument(doc: PromDocument, at: number): LoadSnapshot {
    const perKey = readPromFields(doc, FIELDS, rankOf);
    requireSome(perKey, ['kvUsage', 'running', 'waiting'], FIELDS);
    const capacity = capacities(doc);
    // A capacity for only some ranks would understate the total, so all or nothing.
    const allCapacity = [...perKey.keys()].every((k) => capacity.has(k));
    const counters = new Map<string, number>();
    for (const [key, v] of perKey) if (v.generated !== undefined) counters.set(key, v.generated);
    const rates = this.#rate.update(counters, at);
    const ranks = toRanks(perKey, 'vLLM', (v, key) => ({
      kvUsage: v.kvUsage,
      running: v.running,
      waiting: v.waiting,
      throughput: rates?.get(key),
      capacityTokens: allCapacity ? capacity.get(key) : undefined,
    }));
    return aggregateRanks(ranks, at);
  }
}
