import type { EngineParams } from './engine-params.js';
import { SimConfigError } from './errors.js';
import type { SimWorkerSpec } from './sim-server.js';

/**
 * Engine classes for one mid-size model on three GPU generations. Absolute sizes are scaled down
 * (KV in the tens of thousands of tokens, a few requests per second per worker) so a fleet runs
 * on a laptop core; what matters for routing is kept: the ratios between classes (H100 ~2.5x an
 * A100, ~6x an L40S in saturation throughput for the CHAT workload mix), KV capacity that binds
 * before the batch limit, prefill that is ~10x faster per token than decode and stalls decodes
 * while it runs. Capacities (requests/s at saturation, bench/workload.ts CHAT mix, from
 * estimateCapacity): h100 ~6.3, a100 ~2.5, l40s ~1.1.
 */
export const ENGINE_CLASSES = {
  h100: {
    kvCapacityTokens: 40000,
    prefillTokensPerSec: 12000,
    decodeStepBaseMs: 20,
    decodePerSeqMs: 0.25,
    maxBatchSize: 96,
    maxBatchTokens: 2048,
  },
  a100: {
    kvCapacityTokens: 20000,
    prefillTokensPerSec: 5000,
    decodeStepBaseMs: 30,
    decodePerSeqMs: 0.45,
    maxBatchSize: 64,
    maxBatchTokens: 2048,
  },
  l40s: {
    kvCapacityTokens: 12000,
    prefillTokensPerSec: 2500,
    decodeStepBaseMs: 45,
    decodePerSeqMs: 0.8,
    maxBatchSize: 32,
    maxBatchTokens: 1024,
  },
} as const satisfies Record<string, Partial<EngineParams>>;

export type EngineClass = keyof typeof ENGINE_CLASSES;

/** The same class with every duration multiplied by `factor` (a throttled or older card). */
export function slowed(params: Partial<EngineParams>, factor: number): Partial<EngineParams> {
  return {
    ...params,
    ...(params.prefillTokensPerSec !== undefined
      ? { prefillTokensPerSec: params.prefillTokensPerSec / factor }
      : {}),
    ...(params.decodeStepBaseMs !== undefined ? { decodeStepBaseMs: params.decodeStepBaseMs * factor } : {}),
    ...(params.decodePerSeqMs !== undefined ? { decodePerSeqMs: params.decodePerSeqMs * factor } : {}),
  };
}

/** SSE chunks carry up to this many tokens after the first, keeping client and proxy CPU low. */
const STREAM_INTERVAL = 4;

function worker(
  name: string,
  cls: EngineClass,
  loadFormat: 'sglang' | 'vllm',
  extra: Partial<SimWorkerSpec> = {},
): SimWorkerSpec {
  return {
    name,
    loadFormat,
    accelerator: `simulated ${cls.toUpperCase()}`,
    streamInterval: STREAM_INTERVAL,
    ...ENGINE_CLASSES[cls],
    ...extra,
  };
}

export const SCENARIOS = {
  /** Default heterogeneous fleet: two H100s, an A100, an L40S; both load formats in use. */
  mixed: () => [
    worker('h100-a', 'h100', 'sglang'),
    worker('h100-b', 'h100', 'vllm'),
    worker('a100-a', 'a100', 'vllm'),
    worker('l40s-a', 'l40s', 'sglang'),
  ],
  /** Four identical A100s, one of them four times slower (thermal throttling, a noisy neighbour). */
  'one-slow': () => [
    worker('a100-a', 'a100', 'sglang'),
    worker('a100-b', 'a100', 'vllm'),
    worker('a100-c', 'a100', 'sglang'),
    worker('a100-slow', 'a100', 'vllm', slowed(ENGINE_CLASSES.a100, 4)),
  ],
  /** Four identical A100s: the control, where every policy should look alike. */
  uniform: () => [
    worker('a100-a', 'a100', 'sglang'),
    worker('a100-b', 'a100', 'vllm'),
    worker('a100-c', 'a100', 'sglang'),
    worker('a100-d', 'a100', 'vllm'),
  ],
} as const satisfies Record<string, () => SimWorkerSpec[]>;

export type ScenarioName = keyof typeof SCENARIOS;
export const SCENARIO_NAMES = Object.keys(SCENARIOS) as ScenarioName[];

/** Fresh worker specs for a named scenario (callers may edit them). */
export function scenarioWorkers(name: string): SimWorkerSpec[] {
  if (!Object.hasOwn(SCENARIOS, name)) {
    throw new SimConfigError(`unknown scenario ${JSON.stringify(name)}; known: ${SCENARIO_NAMES.join(', ')}`);
  }
  return SCENARIOS[name as ScenarioName]();
}
