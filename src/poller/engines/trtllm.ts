import { aggregateRanks, type LoadSnapshot } from '../../core/load-snapshot.js';
import type { LoadSource, ReadContext } from '../engine.js';
import type { PromDocument } from '../prometheus-text.js';
import { fetchMetrics, requireSome } from './metrics-endpoint.js';
import { promNames, readPromFields, toRanks, type Labels, type PromField } from './prom-fields.js';

/** trtllm-serve's own /metrics. */
const SERVE_FIELDS = {
  kvUsage: { names: ['trtllm_kv_cache_utilization'], kind: 'ratio', required: true },
  running: { names: ['trtllm_num_requests_running'], kind: 'count', required: true },
  waiting: { names: ['trtllm_num_requests_waiting'], kind: 'count', required: true },
  tokensPerBlock: { names: ['trtllm_kv_cache_tokens_per_block'], kind: 'count' },
  maxBlocks: { names: ['trtllm_kv_cache_max_blocks'], kind: 'count' },
} as const satisfies Record<string, PromField>;

const BLOCKS = 'nv_trt_llm_kv_cache_block_metrics';
const REQUESTS = 'nv_trt_llm_request_metrics';

/** Triton's TensorRT-LLM backend (:8002/metrics): several gauges per family, told apart by a label. */
const TRITON_FIELDS = {
  kvUsage: { names: [BLOCKS], where: { kv_cache_block_type: 'fraction' }, kind: 'ratio', required: true },
  running: { names: [REQUESTS], where: { request_type: 'scheduled' }, kind: 'count', required: true },
  waiting: { names: [REQUESTS], where: { request_type: 'waiting' }, kind: 'count', required: true },
  tokensPerBlock: { names: [BLOCKS], where: { kv_cache_block_type: 'tokens_per' }, kind: 'count' },
  maxBlocks: { names: [BLOCKS], where: { kv_cache_block_type: 'max' }, kind: 'count' },
} as const satisfies Record<string, PromField>;

const NAMES = new Set([...promNames(SERVE_FIELDS), ...promNames(TRITON_FIELDS)]);

// Neither format has data-parallel ranks; a Triton server hosting several models reports each.
const rankOf = (labels: Labels): string => labels.model ?? labels.model_name ?? '';

/** TensorRT-LLM, either trtllm-serve's or Triton's metric names, whichever the server exports. */
export class TrtllmSource implements LoadSource {
  readonly engine = 'trtllm' as const;

  async read(ctx: ReadContext): Promise<LoadSnapshot> {
    const { doc, at } = await fetchMetrics(ctx, NAMES);
    return this.fromDocument(doc, at);
  }

  fromDocument(doc: PromDocument, at: number): LoadSnapshot {
    const fields = doc.has(BLOCKS) || doc.has(REQUESTS) ? TRITON_FIELDS : SERVE_FIELDS;
    const perKey = readPromFields(doc, fields, rankOf);
    requireSome(perKey, ['kvUsage', 'running', 'waiting'], fields);
    const ranks = toRanks(perKey, 'TensorRT-LLM', (v) => ({
      kvUsage: v.kvUsage,
      running: v.running,
      waiting: v.waiting,
      capacityTokens:
        v.tokensPerBlock !== undefined && v.maxBlocks !== undefined
          ? v.tokensPerBlock * v.maxBlocks
          : undefined,
    }));
    return aggregateRanks(ranks, at);
  }
}
