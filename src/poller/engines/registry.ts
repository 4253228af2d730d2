import type { Worker } from '../../core/worker.js';
import type { LoadSource } from '../engine.js';
import { AutoSource, type DetectedEngine } from './auto.js';
import { JsonSource } from './json.js';
import { LlamacppSource } from './llamacpp.js';
import { HealthOnlySource } from './none.js';
import { SglangSource } from './sglang.js';
import { TgiSource } from './tgi.js';
import { TrtllmSource } from './trtllm.js';
import { VllmSource } from './vllm.js';

function concrete(worker: Worker, engine: DetectedEngine | 'json'): LoadSource {
  switch (engine) {
    case 'sglang':
      return new SglangSource();
    case 'vllm':
      return new VllmSource();
    case 'llamacpp':
      return new LlamacppSource();
    case 'tgi':
      return new TgiSource(worker.maxBatchTotalTokens);
    case 'trtllm':
      return new TrtllmSource();
    case 'json':
      return new JsonSource(worker.loadPath, worker.loadFields);
    case 'none':
      return new HealthOnlySource();
  }
}

/** The load source for a worker's configured engine; one per worker, it keeps per-worker memory. */
export function createLoadSource(worker: Worker): LoadSource {
  if (worker.engine === 'auto') return new AutoSource(worker, (engine) => concrete(worker, engine));
  return concrete(worker, worker.engine);
}
