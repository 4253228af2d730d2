import type { Worker } from '../core/worker.js';
import { pickLowest } from '../policies/pick-lowest.js';
import type { Policy, PolicyEnv, RequestContext } from '../policies/policy.js';
import { resolveEngineParams } from './engine-params.js';
import type { SimFleet } from './fleet.js';
import { SIM_PROMPT_TOKENS_HEADER } from './sim-server.js';

/** Weight of the KV barrier in seconds, as in least_load's expected_wait mode. */
const LAMBDA_T = 0.15;
const MEAN_PROMPT_TOKENS = 1024;

/**
 * The benchmark's practical limit: it reads every simulated worker's true state at the moment of
 * the pick (no polling, no staleness) and each worker's true prefill speed, and sends the request
 * where its prompt would start computing soonest:
 *
 *   score = (waiting tokens + unfinished prefill + own prompt) / (prefill tokens/s * DP ranks)
 *           + 0.15 s * k / (1 - k)
 *
 * Only a simulator can offer this; polling policies are judged by how close they come to it.
 */
export class OraclePolicy implements Policy {
  readonly name = 'oracle';
  readonly needsBody = false;
  readonly #fleet: SimFleet;
  readonly #env: PolicyEnv;
  readonly #prefillRate = new Map<string, number>();

  constructor(fleet: SimFleet, env: PolicyEnv) {
    this.#fleet = fleet;
    this.#env = env;
    for (const w of fleet.workers) {
      this.#prefillRate.set(w.id, resolveEngineParams(w.spec).prefillTokensPerSec * (w.spec.dpRanks ?? 1));
    }
  }

  score(worker: Worker, ctx: RequestContext): number {
    const sim = this.#fleet.get(worker.id);
    const rate = this.#prefillRate.get(worker.id);
    if (sim === undefined || rate === undefined) return Infinity;
    const s = sim.state();
    const header = Number(ctx.headers?.[SIM_PROMPT_TOKENS_HEADER]);
    const own = Number.isFinite(header) && header > 0 ? header : (ctx.promptTokens ?? MEAN_PROMPT_TOKENS);
    const k = Math.min(s.kvUsage, 0.999);
    return (s.waitingTokens + s.prefillBacklogTokens + own) / rate + (LAMBDA_T * k) / (1 - k);
  }

  select(candidates: readonly Worker[], ctx: RequestContext): Worker | undefined {
    return pickLowest(candidates, (w) => this.score(w, ctx), this.#env.rng);
  }
}
