import { aggregateRanks, type LoadSnapshot } from '../../core/load-snapshot.js';
import type { LoadSource, ReadContext } from '../engine.js';
import type { PromDocument } from '../prometheus-text.js';
import { fetchMetrics, requireSome } from './metrics-endpoint.js';
import { promNames, readPromFields, toRanks, type PromField } from './prom-fields.js';

const FIELDS = {
  waiting: { names: ['tgi_queue_size'], kind: 'count', required: true },
  running: { names: ['tgi_batch_current_size'], kind: 'count', required: true },
  batchTokens: { names: ['tgi_batch_current_max_tokens'], kind: 'count' },
} as const satisfies Record<string, PromField>;

const NAMES = promNames(FIELDS);

/**
 * Hugging Face TGI `GET /metrics`. TGI exports no usage ratio, only the current batch's token
 * budget; divided by the server's --max-batch-total-tokens (which the router cannot see, so it is
 * configured per worker as `maxBatchTotalTokens`) it is the KV usage. Without it usage is unknown.
 */
export class TgiSource implements LoadSource {
  readonly engine = 'tgi' as const;
  readonly #maxBatchTotalTokens: number | undefined;

  constructor(maxBatchTotalTokens: number | undefined) {
    this.#maxBatchTotalTokens = maxBatchTotalTokens;
  }

  async read(ctx: ReadContext): Promise<LoadSnapshot> {
    const { doc, at } = await fetchMetrics(ctx, NAMES);
    return this.fromDocument(doc, at);
  }

  fromDocument(doc: PromDocument, at: number): LoadSnapshot {
    const perKey = readPromFields(doc, FIELDS, () => '0');
    requireSome(perKey, ['running', 'waiting'], FIELDS);
    const max = this.#maxBatchTotalTokens;
    const ranks = toRanks(perKey, 'TGI', (v) => ({
      running: v.running,
      waiting: v.waiting,
      // The batch budget is an upper bound the scheduler keeps under the max; clamp config drift.
      kvUsage:
        max !== undefined && v.batchTokens !== undefined ? Math.min(1, v.batchTokens / max) : undefined,
      capacityTokens: max,
    }));
    return aggregateRanks(ranks, at);
  }
}
