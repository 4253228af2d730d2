import type { Config, ConfigInput } from './config/schema.js';
import { validateConfig } from './config/validate.js';
import { NoHealthyWorkerError, UnknownWorkerError } from './core/errors.js';
import { Lease, type LeaseOutcome } from './core/lease.js';
import type { Rng } from './core/random.js';
import type { Worker, WorkerSpec } from './core/worker.js';
import { WorkerPool } from './core/worker-pool.js';
import type { Policy, RequestContext } from './policies/policy.js';
import { createPolicy } from './policies/registry.js';
import { LoadPoller } from './poller/load-poller.js';
import type { PollResult } from './poller/poll-result.js';
import type { PollerLogger } from './poller/poller-logger.js';

export interface RouterOptions {
  /** Randomness for policies; seeded in tests and benchmarks. */
  rng?: Rng;
  now?: () => number;
  /** Where the load poller logs failures (once per change) and recoveries; silent by default. */
  logger?: PollerLogger;
}

/** The record `GET /workers` and `router.workers()` return. */
export interface WorkerRecord {
  id: string;
  url: string;
  engine: string;
  healthy: boolean;
  draining: boolean;
  inFlight: number;
  processed: number;
  kvUsage: number | null;
  running: number | null;
  waiting: number | null;
  lastPollAt: string | null;
  score: number | null;
}

/** How one load poll ended (the `result` label of `llr_load_polls_total`). */
export type { PollResult };

/** What a front door saw go wrong with a worker, for passive health. */
export type FailureKind =
  /** Connection refused or reset before any response byte: out of rotation until a good poll. */
  | 'connect'
  /** A 5xx answer: counts toward the consecutive-failure limit, like a failed poll. */
  | 'status';

/** Observes the router's life; metrics and logging plug in here. */
export interface RouterObserver {
  onPick?(lease: Lease, policy: string, durationNs: number): void;
  onRelease?(lease: Lease, outcome: LeaseOutcome): void;
  onNoHealthyWorker?(): void;
  onAdd?(worker: Worker): void;
  onRemove?(worker: Worker): void;
  onHealthChange?(worker: Worker, healthy: boolean, reason: string): void;
  onPoll?(worker: Worker, result: PollResult, durationSeconds: number): void;
  onFailureReport?(worker: Worker, kind: FailureKind): void;
}

// Shared so a pick without context does not allocate one.
const NO_CONTEXT: RequestContext = Object.freeze({});

/** Loads older than this many poll intervals are ignored by the policies. */
export const STALE_AFTER_POLLS = 3;

/**
 * Composes the pool, the policy and (via start/stop) the background parts. Front doors only ever
 * talk to this: `pick()` for a lease, `lease.release()` when the request ends.
 */
export class Router {
  readonly config: Config;
  readonly pool = new WorkerPool();
  readonly policy: Policy;
  /** Reads every worker's load endpoint once started; snapshots replace `worker.load`. */
  readonly poller: LoadPoller;
  readonly #observers: RouterObserver[] = [];
  readonly #now: () => number;
  readonly #rng: Rng;
  readonly #onRelease = (lease: Lease, outcome: LeaseOutcome): void => {
    for (const o of this.#observers) o.onRelease?.(lease, outcome);
  };

  constructor(config: Config, options: RouterOptions = {}) {
    this.config = config;
    this.#now = options.now ?? Date.now;
    this.#rng = options.rng ?? Math.random;
    this.policy = createPolicy(config.policy, {
      rng: this.#rng,
      now: this.#now,
      staleAfterMs: STALE_AFTER_POLLS * config.poller.intervalSecs * 1000,
    });
    this.poller = new LoadPoller({
      config: config.poller,
      host: this,
      now: this.#now,
      logger: options.logger,
    });
    this.pool.onRemove((worker) => {
      this.poller.remove(worker);
      this.policy.onRemove?.(worker.id);
      for (const o of this.#observers) o.onRemove?.(worker);
    });
    for (const spec of config.workers) this.addWorker(spec);
  }

  observe(observer: RouterObserver): () => void {
    this.#observers.push(observer);
    return () => {
      const i = this.#observers.indexOf(observer);
      if (i >= 0) this.#observers.splice(i, 1);
    };
  }

  /**
   * Picks a worker and counts the request against it at once (in-flight +1, processed +1), so
   * the next pick already sees it. Throws NoHealthyWorkerError when no worker can take it.
   */
  pick(ctx: RequestContext = NO_CONTEXT): Lease {
    const started = this.#observers.length > 0 ? process.hrtime.bigint() : 0n;
    const candidates = this.pool.candidates();
    const worker = candidates.length === 1 ? candidates[0] : this.policy.select(candidates, ctx);
    if (worker === undefined) {
      for (const o of this.#observers) o.onNoHealthyWorker?.();
      throw new NoHealthyWorkerError();
    }
    worker.inFlight += 1;
    worker.processed += 1;
    const lease = new Lease(worker, this.#onRelease);
    if (this.#observers.length > 0) {
      const ns = Number(process.hrtime.bigint() - started);
      for (const o of this.#observers) o.onPick?.(lease, this.policy.name, ns);
    }
    return lease;
  }

  /**
   * A pick plus up to `fallbacks` other healthy workers, best first by the policy's score (or in
   * random order for policies without one), for gateways that retry on the next endpoint.
   */
  pickWithFallbacks(ctx: RequestContext, fallbacks: number): { lease: Lease; fallbacks: Worker[] } {
    const lease = this.pick(ctx);
    if (fallbacks <= 0) return { lease, fallbacks: [] };
    const others = this.pool.candidates().filter((w) => w !== lease.worker);
    const score = this.policy.score?.bind(this.policy);
    const keyed = others.map((w) => ({ w, key: score ? score(w, ctx) : this.#rng() }));
    keyed.sort((a, b) => a.key - b.key);
    return { lease, fallbacks: keyed.slice(0, fallbacks).map((k) => k.w) };
  }

  /** Passive health: a front door reports what went wrong talking to `worker`. */
  reportFailure(worker: Worker, kind: FailureKind): void {
    if (!this.pool.has(worker.id)) return;
    for (const o of this.#observers) o.onFailureReport?.(worker, kind);
    if (kind === 'connect') {
      worker.consecutiveFailures = Math.max(worker.consecutiveFailures, this.config.poller.unhealthyAfter);
    } else {
      worker.consecutiveFailures += 1;
    }
    if (worker.healthy && worker.consecutiveFailures >= this.config.poller.unhealthyAfter) {
      this.setHealth(worker, false, kind === 'connect' ? 'connection failed' : 'upstream 5xx');
    }
  }

  /** The one place worker health changes, so every observer hears about it exactly once. */
  setHealth(worker: Worker, healthy: boolean, reason: string): void {
    if (worker.healthy === healthy) return;
    worker.setHealthy(healthy);
    for (const o of this.#observers) o.onHealthChange?.(worker, healthy, reason);
  }

  /** Lets background parts (the poller) report to the same observers as the router. */
  notifyPoll(worker: Worker, result: PollResult, durationSeconds: number): void {
    for (const o of this.#observers) o.onPoll?.(worker, result, durationSeconds);
  }

  addWorker(spec: WorkerSpec | string): Worker {
    const worker = this.pool.add(spec);
    this.poller.add(worker);
    for (const o of this.#observers) o.onAdd?.(worker);
    return worker;
  }

  removeWorker(id: string): Worker {
    const worker = this.pool.remove(id);
    if (!worker) throw new UnknownWorkerError(id);
    return worker;
  }

  workers(): WorkerRecord[] {
    return this.pool.list().map((w) => this.#record(w));
  }

  #record(w: Worker): WorkerRecord {
    const load = w.load;
    const score = this.policy.score && w.healthy && !w.draining ? this.policy.score(w, {}) : undefined;
    return {
      id: w.id,
      url: w.url,
      engine: w.detectedEngine ?? w.engine,
      healthy: w.healthy,
      draining: w.draining,
      inFlight: w.inFlight,
      processed: w.processed,
      kvUsage: load?.kvUsage ?? null,
      running: load?.running ?? null,
      waiting: load?.waiting ?? null,
      lastPollAt: w.lastPollAt === undefined ? null : new Date(w.lastPollAt).toISOString(),
      score: score === undefined ? null : score,
    };
  }

  /** Starts polling every worker's load endpoint (workers added later are polled as they come). */
  async start(): Promise<void> {
    this.poller.start();
  }

  /** Stops polling; resolves once no timer, request or socket of the poller is left. */
  async stop(): Promise<void> {
    await this.poller.stop();
  }
}

/** The programmatic entry point: validates the config (throwing ConfigError) and builds a Router. */
export function createRouter(config: ConfigInput = {}, options: RouterOptions = {}): Router {
  return new Router(validateConfig(config), options);
}
