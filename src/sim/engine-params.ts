import { SimConfigError } from './errors.js';

/**
 * The knobs of one simulated engine (one data-parallel rank). Names follow the engines' own
 * settings where one exists: `maxBatchSize` is vLLM's max_num_seqs / SGLang's max_running_requests,
 * `maxBatchTokens` is vLLM's max_num_batched_tokens (the chunked-prefill budget per step).
 */
export interface EngineParams {
  /** KV-cache size in tokens (SGLang max_total_num_tokens). */
  kvCapacityTokens: number;
  /** Prefill speed: prompt tokens computed per second of step time. */
  prefillTokensPerSec: number;
  /** Fixed cost of one forward step (weights read once per step), ms. */
  decodeStepBaseMs: number;
  /** Extra step time per decoding sequence in the batch, ms. */
  decodePerSeqMs: number;
  /** Most sequences running at once. */
  maxBatchSize: number;
  /** Tokens one step may process: one per decoding sequence plus prefill chunks. */
  maxBatchTokens: number;
  /** Longest prompt + max_tokens accepted; longer requests get HTTP 400. At most kvCapacityTokens. */
  maxModelLen: number;
  /** Free KV fraction kept back when admitting, so admission alone does not force preemption. */
  admitWatermark: number;
}

export const DEFAULT_ENGINE_PARAMS: Readonly<EngineParams> = Object.freeze({
  kvCapacityTokens: 32768,
  prefillTokensPerSec: 8000,
  decodeStepBaseMs: 20,
  decodePerSeqMs: 0.25,
  maxBatchSize: 64,
  maxBatchTokens: 2048,
  maxModelLen: 32768,
  admitWatermark: 0.01,
});

/** Fills defaults (maxModelLen defaults to the KV capacity) and rejects impossible values. */
export function resolveEngineParams(partial: Partial<EngineParams> = {}): EngineParams {
  const kv = partial.kvCapacityTokens ?? DEFAULT_ENGINE_PARAMS.kvCapacityTokens;
  const p: EngineParams = {
    ...DEFAULT_ENGINE_PARAMS,
    maxModelLen: kv,
    ...pickParams(partial),
  };
  const positive = ['kvCapacityTokens', 'prefillTokensPerSec', 'maxBatchSize', 'maxBatchTokens'] as const;
  for (const k of positive) {
    if (!Number.isFinite(p[k]) || p[k] <= 0) throw new SimConfigError(`${k} must be > 0, got ${p[k]}`);
  }
  for (const k of ['decodeStepBaseMs', 'decodePerSeqMs'] as const) {
    if (!Number.isFinite(p[k]) || p[k] < 0) throw new SimConfigError(`${k} must be >= 0, got ${p[k]}`);
  }
  if (p.decodeStepBaseMs + p.decodePerSeqMs <= 0) {
    throw new SimConfigError('decodeStepBaseMs + decodePerSeqMs must be > 0 (a step takes time)');
  }
  if (!Number.isInteger(p.maxBatchSize)) throw new SimConfigError(`maxBatchSize must be an integer`);
  // Decodes always fit the step budget, so a step can never stall with work to do.
  if (p.maxBatchTokens <= p.maxBatchSize) {
    throw new SimConfigError(
      `maxBatchTokens (${p.maxBatchTokens}) must exceed maxBatchSize (${p.maxBatchSize})`,
    );
  }
  // A lone request must fit the cache, or it would preempt itself forever.
  if (!(p.maxModelLen > 0 && p.maxModelLen <= p.kvCapacityTokens)) {
    throw new SimConfigError(
      `maxModelLen must be in 1..kvCapacityTokens (${p.kvCapacityTokens}), got ${p.maxModelLen}`,
    );
  }
  if (!(p.admitWatermark >= 0 && p.admitWatermark < 1)) {
    throw new SimConfigError(`admitWatermark must be in [0, 1), got ${p.admitWatermark}`);
  }
  return p;
}

/** Only engine keys, and only those set: a worker spec carries other fields (name, format...). */
function pickParams(o: Partial<EngineParams>): Partial<EngineParams> {
  const out: Partial<EngineParams> = {};
  for (const k of Object.keys(DEFAULT_ENGINE_PARAMS) as (keyof EngineParams)[]) {
    if (o[k] !== undefined) out[k] = o[k];
  }
  return out;
}
