import type { Worker } from '../core/worker.js';
import { MAX_KV } from './kv-usage.js';
import type { Policy, PolicyEnv, RequestContext } from './policy.js';

export interface ExpectedWaitOptions {
  /** Weight of the KV barrier, in seconds. */
  lambdaT: number;
  /** Tokens per second assumed for a worker that reports no throughput. */
  fallbackThroughput: number;
  /** Prompt size assumed for a request (or a queued request) of unknown size. */
  meanPromptTokens: number;
  /** Read the request body for its prompt size (makes front doors buffer the body). */
  bodyAware: boolean;
}

interface Sent {
  /** Token work routed to the worker since its last load report. */
  tokens: number;
  /** The report `tokens` counts from. */
  since: number;
  /** Smoothed reported throughput (tok/s), 0 until the first positive report. */
  throughput: number;
}

/** Weight of a new throughput report in the moving average. */
const THROUGHPUT_ALPHA = 0.3;

/**
 * least_load `mode: expected_wait`: the time a new request would wait on each worker.
 *
 *   score = (queued + sent + own) / throughput + lambdaT * k / (1 - k)          [seconds]
 *
 * queued: prompt tokens waiting at the last report (SGLang reports them; otherwise waiting requests
 * times the mean prompt); sent: token work this router routed there since that report, so a burst
 * between polls spreads; own: this request's prompt tokens (or the mean); throughput: the worker's
 * reported tokens/s, else the fallback. A worker with no fresh report falls back to the seed
 * formula's signal in the same unit: its in-flight requests times the mean prompt over the
 * fallback throughput. k is clamped and ignored when stale, as in the seed formula.
 */
export class ExpectedWaitPolicy implements Policy {
  readonly name = 'least_load';
  readonly mode = 'expected_wait';
  readonly needsBody: boolean;
  readonly options: ExpectedWaitOptions;
  readonly #env: PolicyEnv;
  readonly #sent = new Map<string, Sent>();
  /** Keyed by candidate array (the pool reuses one per model until something changes). */
  #aligned = new WeakMap<readonly Worker[], Sent[]>();

  constructor(options: ExpectedWaitOptions, env: PolicyEnv) {
    this.options = options;
    this.needsBody = options.bodyAware;
    this.#env = env;
  }

  score(worker: Worker, ctx: RequestContext): number {
    return this.#score(worker, this.#state(worker), this.#own(ctx), this.#env.now());
  }

  #own(ctx: RequestContext): number {
    const t = ctx.promptTokens;
    return t !== undefined && t > 0 && Number.isFinite(t) ? t : this.options.meanPromptTokens;
  }

  #state(worker: Worker): Sent {
    let state = this.#sent.get(worker.id);
    if (state === undefined) {
      state = { tokens: 0, since: worker.load?.at ?? 0, throughput: 0 };
      this.#sent.set(worker.id, state);
      this.#observe(state, worker);
    }
    return state;
  }

  /** Rolls the state over to a newer report: sent work starts again, throughput is averaged in. */
  #refresh(state: Sent, worker: Worker): Sent {
    const at = worker.load?.at ?? 0;
    if (at > state.since) {
      state.tokens = 0;
      state.since = at;
      this.#observe(state, worker);
    }
    return state;
  }

  /**
   * Throughput reports are noisy: an idle or short poll interval reads 0 (SGLang's gauge is zeroed
   * when idle, vLLM's is a counter delta), and a raw 0 would make a slow worker look like the
   * fallback speed. Only positive reports move the average.
   */
  #observe(state: Sent, worker: Worker): void {
    const t = worker.load?.throughput;
    if (t === undefined || !(t > 0) || !Number.isFinite(t)) return;
    state.throughput =
      state.throughput > 0 ? state.throughput + THROUGHPUT_ALPHA * (t - state.throughput) : t;
  }

  #score(worker: Worker, state: Sent, own: number, now: number): number {
    const { lambdaT, fallbackThroughput, meanPromptTokens } = this.options;
    const load = worker.load;
    const fresh = load !== undefined && now - load.at <= this.#env.staleAfterMs;
    if (!fresh) return (worker.inFlight * meanPromptTokens + own) / fallbackThroughput;
    let queued = load.waitingTokens;
    if (queued === undefined || !(queued >= 0)) {
      const waiting = load.waiting;
      queued = waiting !== undefined && waiting >= 0 ? waiting * meanPromptTokens : 0;
    }
    this.#refresh(state, worker);
    const throughput = state.throughput > 0 ? state.throughput : fallbackThroughput;
    const sent = state.tokens;
    const s = (queued + sent + own) / throughput;
    let k = load.kvUsage;
    if (k === undefined || !Number.isFinite(k)) return s;
    // What was sent since the report (and this request) will occupy KV before the next report
    // shows it: project it, where the engine tells us its capacity.
    const capacity = load.capacityTokens;
    if (capacity !== undefined && capacity > 0) k += (sent + own) / capacity;
    if (k <= 0) return s;
    if (k > MAX_KV) k = MAX_KV;
    return s + (lambdaT * k) / (1 - k);
  }

  select(candidates: readonly Worker[], ctx: RequestContext): Worker | undefined {
    // Per-worker state lined up with the candidate array, which the pool keeps (same identity)
    // until membership or health changes: no map lookups and no closures on the pick path.
    let states = this.#aligned.get(candidates);
    if (states === undefined) {
      states = candidates.map((w) => this.#state(w));
      this.#aligned.set(candidates, states);
    }
    const now = this.#env.now();
    const own = this.#own(ctx);
    let best = -1;
    let bestScore = Infinity;
    let ties = 0;
    for (let i = 0; i < candidates.length; i++) {
      const s = this.#score(candidates[i] as Worker, states[i] as Sent, own, now);
      if (s < bestScore) {
        best = i;
        bestScore = s;
        ties = 1;
      } else if (s === bestScore) {
        ties += 1;
        if (this.#env.rng() * ties < 1) best = i;
      }
    }
    if (best < 0) return undefined;
    const worker = candidates[best] as Worker;
    this.#refresh(states[best] as Sent, worker).tokens += own;
    return worker;
  }

  onRemove(workerId: string): void {
    this.#sent.delete(workerId);
    this.#aligned = new WeakMap(); // arrays holding the old state must not be reused
  }
}
