import { aggregateRanks, type LoadSnapshot } from '../../core/load-snapshot.js';
import type { LoadSource, ReadContext } from '../engine.js';
import type { PromDocument } from '../prometheus-text.js';
import { CounterRate } from './counter-rate.js';
import { fetchMetrics, requireSome } from './metrics-endpoint.js';
import { promNames, readPromFields, toRanks, type PromField } from './prom-fields.js';

const FIELDS = {
  running: { names: ['llamacpp:requests_processing'], kind: 'count', required: true },
  waiting: { names: ['llamacpp:requests_deferred'], kind: 'count', required: true },
  // Only older servers export it; current llama.cpp has no KV gauge, so usage stays unknown.
  kvUsage: { names: ['llamacpp:kv_cache_usage_ratio'], kind: 'ratio' },
  generated: { names: ['llamacpp:tokens_predicted_total'], kind: 'count' },
} as const satisfies Record<string, PromField>;

const NAMES = promNames(FIELDS);

/**
 * llama.cpp `llama-server --metrics`: one process, one rank. Throughput from the change of
 * tokens_predicted_total (the predicted_tokens_seconds gauge is a lifetime average).
 */
export class LlamacppSource implements LoadSource {
  readonly engine = 'llamacpp' as const;
  readonly #rate = new CounterRate();

  async read(ctx: ReadContext): Promise<LoadSnapshot> {
    const { doc, at } = await fetchMetrics(ctx, NAMES);
    return this.fromDocument(doc, at);
  }

  fromDocument(doc: PromDocument, at: number): LoadSnapshot {
    const perKey = readPromFields(doc, FIELDS, () => '0');
    requireSome(perKey, ['running', 'waiting'], FIELDS);
    const generated = perKey.get('0')?.generated;
    const rates = this.#rate.update(generated === undefined ? new Map() : new Map([['0', generated]]), at);
    const ranks = toRanks(perKey, 'llama.cpp', (v, key) => ({
      kvUsage: v.kvUsage,
      running: v.running,
      waiting: v.waiting,
      throughput: rates?.get(key),
    }));
    return aggregateRanks(ranks, at);
  }
}
