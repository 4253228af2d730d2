import type { Config, ConfigInput } from './config/schema.js';
import { validateConfig } from './config/validate.js';
import { NoHealthyWorkerError, UnknownModelError, UnknownWorkerError } from './core/errors.js';
import { Lease, type LeaseOutcome } from './core/lease.js';
import type { Rng } from './core/random.js';
import { isDeepStrictEqual } from 'node:util';
import { parseWorkerUrl, type Worker, type WorkerSpec } from './core/worker.js';
import { WorkerPool } from './core/worker-pool.js';
import type { Policy, PolicyEnv, RequestContext } from './policies/policy.js';
import { createPolicy } from './policies/registry.js';
import { LoadPoller } from './poller/load-poller.js';
import type { PollResult } from './poller/poll-result.js';
import type { PollerLogger } from './poller/poller-logger.js';
import { SharedInFlight, type SharedStateOp } from './state/shared-in-flight.js';

export interface RouterOptions {
  /** Randomness for policies; seeded in tests and benchmarks. */
  rng?: Rng;
  now?: () => number;
  /**
   * Use this policy instead of building one from `config.policy` (custom policies, benchmarks'
   * oracle). A config reload keeps it.
   */
  policy?: Policy;
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
  /** A Redis operation of the shared in-flight state failed (routing goes on locally). */
  onSharedStateError?(op: SharedStateOp, error: unknown): void;
}

/** Where a worker came from: the config file, DNS discovery, or the admin/programmatic API. */
export type WorkerSource = 'config' | 'discovery' | 'api';

export interface ReconfigureResult {
  added: string[];
  removed: string[];
  /** The policy was rebuilt with new settings. */
  policy: boolean;
  /** The poller was restarted with new settings. */
  poller: boolean;
  /** Config sections that changed but only take effect after a restart. */
  restartNeeded: string[];
}

function sameWorker(worker: Worker, spec: WorkerSpec): boolean {
  return (
    worker.url === parseWorkerUrl(spec.url).url &&
    worker.engine === (spec.engine ?? 'auto') &&
    worker.apiKey === spec.apiKey &&
    worker.weight === (spec.weight ?? 1)
  );
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
  readonly pool = new WorkerPool();
  #config: Config;
  #policy: Policy;
  #poller: LoadPoller;
  readonly #observers: RouterObserver[] = [];
  readonly #now: () => number;
  readonly #rng: Rng;
  readonly #logger: PollerLogger | undefined;
  readonly #injectedPolicy: Policy | undefined;
  /** Policies of models that configure their own (`models.<name>.policy`). */
  #modelPolicies = new Map<string, Policy>();
  /** Where each worker came from, so a config reload only touches the workers the config owns. */
  readonly #sources = new Map<string, WorkerSource>();
  #started = false;
  /** Cached pool.modelAware: the pick path must not loop over the pool for it. */
  #modelAware = false;
  /** Set when `state.redis` is configured: other replicas' leases join `inFlight`. */
  readonly #shared: SharedInFlight | undefined;
  readonly #onRelease = (lease: Lease, outcome: LeaseOutcome): void => {
    const w = lease.worker;
    if (w.ownInFlight > 0) w.ownInFlight -= 1;
    if (this.#shared !== undefined) this.#shared.changed();
    for (const o of this.#observers) o.onRelease?.(lease, outcome);
    // Draining waits for this router's own requests; other replicas drain theirs.
    if (w.draining && w.ownInFlight === 0 && this.pool.get(w.id) === w) this.pool.remove(w.id);
  };

  constructor(config: Config, options: RouterOptions = {}) {
    this.#config = config;
    this.#now = options.now ?? Date.now;
    this.#rng = options.rng ?? Math.random;
    this.#logger = options.logger;
    this.#injectedPolicy = options.policy;
    this.#policy = this.#createPolicy(config);
    this.#modelPolicies = this.#createModelPolicies(config);
    this.#poller = this.#createPoller(config);
    this.pool.onRemove((worker) => {
      this.#sources.delete(worker.id);
      this.#modelAware = this.pool.modelAware;
      this.#poller.remove(worker);
      this.#policy.onRemove?.(worker.id);
      for (const p of this.#modelPolicies.values()) p.onRemove?.(worker.id);
      for (const o of this.#observers) o.onRemove?.(worker);
    });
    for (const spec of config.workers) this.addWorker(spec, 'config');
    const redis = config.state?.redis;
    this.#shared = redis
      ? new SharedInFlight({ config: redis, host: this, logger: this.#logger })
      : undefined;
  }

  get config(): Config {
    return this.#config;
  }

  get policy(): Policy {
    return this.#policy;
  }

  /** The in-flight counts shared with other replicas through Redis, when `state.redis` is set. */
  get sharedState(): SharedInFlight | undefined {
    return this.#shared;
  }

  /** Reads every worker's load endpoint once started; snapshots replace `worker.load`. */
  get poller(): LoadPoller {
    return this.#poller;
  }

  #createPolicy(config: Config): Policy {
    if (this.#injectedPolicy) return this.#injectedPolicy;
    return createPolicy(config.policy, this.#policyEnv(config));
  }

  #policyEnv(config: Config): PolicyEnv {
    return {
      rng: this.#rng,
      now: this.#now,
      staleAfterMs: STALE_AFTER_POLLS * config.poller.intervalSecs * 1000,
    };
  }

  #createModelPolicies(config: Config): Map<string, Policy> {
    const env = this.#policyEnv(config);
    return new Map(
      Object.entries(config.models ?? {}).map(([model, m]) => [model, createPolicy(m.policy, env)]),
    );
  }

  #createPoller(config: Config): LoadPoller {
    return new LoadPoller({ config: config.poller, host: this, now: this.#now, logger: this.#logger });
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
    const candidates = this.#candidates(ctx);
    const policy =
      ctx.model === undefined ? this.#policy : (this.#modelPolicies.get(ctx.model) ?? this.#policy);
    const worker = candidates.length === 1 ? candidates[0] : policy.select(candidates, ctx);
    if (worker === undefined) {
      for (const o of this.#observers) o.onNoHealthyWorker?.();
      throw new NoHealthyWorkerError();
    }
    worker.inFlight += 1;
    worker.ownInFlight += 1;
    worker.processed += 1;
    if (this.#shared !== undefined) this.#shared.changed();
    const lease = new Lease(worker, this.#onRelease);
    if (this.#observers.length > 0) {
      const ns = Number(process.hrtime.bigint() - started);
      for (const o of this.#observers) o.onPick?.(lease, policy.name, ns);
    }
    return lease;
  }

  /**
   * Where a request may go: every healthy worker, or, once workers declare their models, those
   * serving the request's model. A model no worker serves is a client error, not an outage.
   */
  #candidates(ctx: RequestContext): readonly Worker[] {
    const model = ctx.model;
    if (model === undefined || !this.#modelAware) return this.pool.candidates();
    const list = this.pool.candidatesFor(model);
    if (list.length === 0 && !this.pool.serves(model)) throw new UnknownModelError(model);
    return list;
  }

  /** Front doors must read the body when the policy needs the prompt or routing depends on the model. */
  get needsBody(): boolean {
    return this.#policy.needsBody || this.#modelAware || this.#modelPolicies.size > 0;
  }

  /**
   * A pick plus up to `fallbacks` other healthy workers, best first by the policy's score (or in
   * random order for policies without one), for gateways that retry on the next endpoint.
   */
  pickWithFallbacks(ctx: RequestContext, fallbacks: number): { lease: Lease; fallbacks: Worker[] } {
    const lease = this.pick(ctx);
    if (fallbacks <= 0) return { lease, fallbacks: [] };
    const others = this.#candidates(ctx).filter((w) => w !== lease.worker);
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

  /** Lets the shared state report Redis failures to the same observers. */
  notifySharedStateError(op: SharedStateOp, error: unknown): void {
    for (const o of this.#observers) o.onSharedStateError?.(op, error);
  }

  addWorker(spec: WorkerSpec | string, source: WorkerSource = 'api'): Worker {
    const worker = this.pool.add(spec);
    if (worker.models.length > 0) this.#modelAware = true;
    this.#sources.set(worker.id, source);
    this.#poller.add(worker);
    for (const o of this.#observers) o.onAdd?.(worker);
    return worker;
  }

  /**
   * Drains a worker: no new picks from now on, requests in flight finish, and the worker leaves
   * the pool (state, polling and metric series with it) when its last lease is released.
   */
  removeWorker(id: string): Worker {
    const worker = this.pool.get(id);
    if (!worker) throw new UnknownWorkerError(id);
    worker.setDraining();
    if (worker.ownInFlight === 0) this.pool.remove(id);
    return worker;
  }

  /** This router's requests in flight over every worker, draining ones included. */
  inFlight(): number {
    let total = 0;
    for (const w of this.pool.list()) total += w.ownInFlight;
    return total;
  }

  /**
   * Applies a new config without a restart: workers the config owns are reconciled (new ones
   * added, missing ones drained; discovered and API-added workers are left alone), and the policy
   * and poller are rebuilt when their settings changed. Listener ports and the metric prefix
   * cannot move in a running process: they are reported back in `restartNeeded`.
   */
  reconfigure(next: Config): ReconfigureResult {
    const prev = this.#config;
    const result: ReconfigureResult = {
      added: [],
      removed: [],
      policy: false,
      poller: false,
      restartNeeded: [],
    };
    const wanted = new Map(next.workers.map((spec) => [parseWorkerUrl(spec.url).id, spec]));
    for (const [id, source] of [...this.#sources]) {
      if (source !== 'config') continue;
      const spec = wanted.get(id);
      const current = this.pool.get(id);
      if (spec && current && sameWorker(current, spec)) continue;
      this.removeWorker(id);
      result.removed.push(id);
    }
    for (const [id, spec] of wanted) {
      if (this.pool.has(id)) continue;
      this.addWorker(spec, 'config');
      result.added.push(id);
    }
    this.#config = next;
    const pollerChanged = !isDeepStrictEqual(prev.poller, next.poller);
    if (pollerChanged || !isDeepStrictEqual(prev.policy, next.policy)) {
      const old = this.#policy;
      this.#policy = this.#createPolicy(next);
      result.policy = old.name !== this.#policy.name || !isDeepStrictEqual(prev.policy, next.policy);
    }
    if (pollerChanged || !isDeepStrictEqual(prev.models, next.models)) {
      this.#modelPolicies = this.#createModelPolicies(next);
      result.policy ||= !isDeepStrictEqual(prev.models, next.models);
    }
    if (pollerChanged) {
      const old = this.#poller;
      void old.stop();
      this.#poller = this.#createPoller(next);
      for (const w of this.pool.list()) if (!w.draining) this.#poller.add(w);
      if (this.#started) this.#poller.start();
      result.poller = true;
    }
    for (const key of ['envoy', 'proxy', 'metrics', 'host', 'state'] as const) {
      if (!isDeepStrictEqual(prev[key], next[key])) result.restartNeeded.push(key);
    }
    return result;
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
    this.#started = true;
    this.#poller.start();
    // Never fails because of Redis: without it the router routes on its own view.
    await this.#shared?.start();
  }

  /** Stops polling (and leaves the shared state); resolves once no timer, request or socket is left. */
  async stop(): Promise<void> {
    this.#started = false;
    await Promise.all([this.#poller.stop(), this.#shared?.stop()]);
  }
}

/** The programmatic entry point: validates the config (throwing ConfigError) and builds a Router. */
export function createRouter(config: ConfigInput = {}, options: RouterOptions = {}): Router {
  return new Router(validateConfig(config), options);
}
