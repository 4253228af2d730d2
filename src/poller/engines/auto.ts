import type { LoadSnapshot } from '../../core/load-snapshot.js';
import type { EngineName, Worker } from '../../core/worker.js';
import type { LoadSource, ReadContext } from '../engine.js';
import { PollRequestError } from '../errors.js';
import type { LimitedResponse } from '../fetch-limited.js';
import { parsePrometheusText } from '../prometheus-text.js';
import { isAbsent, isOk } from './http-status.js';
import { METRICS_PATH } from './metrics-endpoint.js';
import { parseSglangLoads } from './sglang.js';

export type DetectedEngine = Exclude<EngineName, 'auto' | 'json'>;

const LOADS_PATH = '/v1/loads?include=core';

/** Metric-name prefixes that identify an engine's /metrics page, checked in this order. */
const PREFIXES: readonly [string, DetectedEngine][] = [
  ['sglang:', 'sglang'],
  ['sglang_', 'sglang'],
  ['vllm:', 'vllm'],
  ['llamacpp:', 'llamacpp'],
  ['tgi_', 'tgi'],
  ['trtllm_', 'trtllm'],
  ['nv_trt_llm_', 'trtllm'],
];

/**
 * Whether a non-2xx answer means "this endpoint is not here" (try the next) rather than "the
 * server is in trouble or refuses us" (fail the poll and detect again next time).
 */
function notServed(res: LimitedResponse): boolean {
  if (isAbsent(res.status)) return true;
  return res.status >= 400 && res.status < 500 && ![401, 403, 408, 429].includes(res.status);
}

function failed(path: string, res: LimitedResponse): PollRequestError {
  return new PollRequestError('http_error', `GET ${path} answered ${res.status}`, { status: res.status });
}

/**
 * Works out which engine a worker runs from what it serves: SGLang's /v1/loads, else the metric
 * name prefixes on /metrics, else none (health only). Throws when the worker cannot tell us yet
 * (down, 5xx, auth refused, unparseable /metrics), so the caller tries again on the next poll.
 */
export async function detectEngine(ctx: ReadContext): Promise<DetectedEngine> {
  const loads = await ctx.get(LOADS_PATH);
  if (isOk(loads.status)) {
    try {
      parseSglangLoads(loads.body, 0);
      return 'sglang';
    } catch {
      // Some other server's JSON at that path: keep looking.
    }
  } else if (!notServed(loads)) {
    throw failed(LOADS_PATH, loads);
  }
  const metrics = await ctx.get(METRICS_PATH);
  if (!isOk(metrics.status)) {
    if (notServed(metrics)) return 'none';
    throw failed(METRICS_PATH, metrics);
  }
  const names = [...parsePrometheusText(metrics.body).names()];
  for (const [prefix, engine] of PREFIXES) if (names.some((n) => n.startsWith(prefix))) return engine;
  return 'none';
}

/**
 * `auto`: detects the engine on the first successful poll, remembers it for the worker's life and
 * records it as `worker.detectedEngine` (shown in /workers); then reads like that engine.
 */
export class AutoSource implements LoadSource {
  readonly #worker: Worker;
  readonly #create: (engine: DetectedEngine) => LoadSource;
  #detected: LoadSource | undefined;

  constructor(worker: Worker, create: (engine: DetectedEngine) => LoadSource) {
    this.#worker = worker;
    this.#create = create;
  }

  get engine(): EngineName | undefined {
    return this.#detected?.engine;
  }

  async read(ctx: ReadContext): Promise<LoadSnapshot | undefined> {
    if (this.#detected === undefined) {
      const engine = await detectEngine(ctx);
      this.#detected = this.#create(engine);
      this.#worker.detectedEngine = engine;
    }
    return this.#detected.read(ctx);
  }
}
