import { EngineModel, type SubmitSpec } from './engine-model.js';
import type { EngineParams } from './engine-params.js';
import { runVirtual } from './virtual-run.js';

export interface CapacityEstimate {
  /** Completed requests per second of model time at saturation. */
  requestsPerSec: number;
  outputTokensPerSec: number;
  /** Preemptions per completed request at saturation (thrashing shows up here). */
  preemptionsPerRequest: number;
}

/**
 * Saturation throughput of one engine for a request mix: every request is queued at t = 0, so the
 * engine always has work, and the completion rate is measured between the 20th and 80th percentile
 * of completions (skipping the ramp-up and the drain). This is the rate a Poisson stream can
 * approach but not exceed without the queue growing forever, i.e. "100% load". Deterministic: the
 * model runs on a virtual clock.
 */
export function estimateCapacity(
  params: Partial<EngineParams>,
  sample: (index: number) => SubmitSpec,
  requests = 1500,
): CapacityEstimate {
  const model = new EngineModel(params);
  const arrivals = Array.from({ length: requests }, (_, i) => ({ ...sample(i), at: 0 }));
  const { records, counters } = runVirtual(model, arrivals);
  const done = records
    .filter((r) => r.e2eMs !== undefined)
    .map((r) => ({ at: r.e2eMs!, tokens: r.generated }))
    .sort((a, b) => a.at - b.at);
  if (done.length < 10) return { requestsPerSec: 0, outputTokensPerSec: 0, preemptionsPerRequest: 0 };
  const lo = Math.floor(done.length * 0.2);
  const hi = Math.floor(done.length * 0.8);
  const span = (done[hi]!.at - done[lo]!.at) / 1000;
  let tokens = 0;
  for (let i = lo + 1; i <= hi; i++) tokens += done[i]!.tokens;
  return {
    requestsPerSec: (hi - lo) / span,
    outputTokensPerSec: tokens / span,
    preemptionsPerRequest: counters.preemptions / done.length,
  };
}

export interface FleetCapacity {
  requestsPerSec: number;
  perWorker: Record<string, number>;
}

/**
 * Sum of the workers' saturation throughputs (times their DP ranks), each measured on the same
 * request mix. `sampler(name)` must return a fresh, identically seeded sampler per call so every
 * worker sees the same requests.
 */
export function estimateFleetCapacity(
  workers: readonly (Partial<EngineParams> & { name: string; dpRanks?: number })[],
  sampler: () => (index: number) => SubmitSpec,
  requests = 1500,
): FleetCapacity {
  const perWorker: Record<string, number> = {};
  let total = 0;
  for (const w of workers) {
    const c = estimateCapacity(w, sampler(), requests).requestsPerSec * (w.dpRanks ?? 1);
    perWorker[w.name] = c;
    total += c;
  }
  return { requestsPerSec: total, perWorker };
}
