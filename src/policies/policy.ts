import type { Rng } from '../core/random.js';
import type { Worker } from '../core/worker.js';

/** What a front door knows about a request. Body-derived fields are filled only for `needsBody` policies. */
export interface RequestContext {
  method?: string;
  path?: string;
  authority?: string;
  /** Lower-case header names. */
  headers?: Readonly<Record<string, string | undefined>>;
  model?: string;
  prompt?: string;
  promptTokens?: number;
  routingKey?: string;
}

/** What every policy may rely on, injected so tests and benchmarks can pin time and randomness. */
export interface PolicyEnv {
  rng: Rng;
  now: () => number;
  /** A load report older than this is stale and must be ignored. */
  staleAfterMs: number;
}

export interface Policy {
  readonly name: string;
  /** True when the policy reads the prompt or model, so front doors must buffer the body. */
  readonly needsBody: boolean;
  /** Picks among `candidates` (healthy, non-empty, never to be mutated). */
  select(candidates: readonly Worker[], ctx: RequestContext): Worker | undefined;
  /** Lower is better; policies that rank workers expose it for `/workers` and fallback ordering. */
  score?(worker: Worker, ctx: RequestContext): number;
  /** Drops any per-worker state; called when a worker leaves the pool. */
  onRemove?(workerId: string): void;
}
