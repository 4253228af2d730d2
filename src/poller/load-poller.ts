import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import type { PollerConfig } from '../config/schema.js';
import type { LoadSnapshot } from '../core/load-snapshot.js';
import type { Rng } from '../core/random.js';
import type { Worker } from '../core/worker.js';
import { ConcurrencyLimit } from './concurrency-limit.js';
import type { LoadSource, LoadSourceFactory, ReadContext } from './engine.js';
import { createLoadSource } from './engines/registry.js';
import { LoadParseError, PollCancelledError, PollRequestError, PrometheusParseError } from './errors.js';
import { fetchLimited } from './fetch-limited.js';
import type { PollResult } from './poll-result.js';
import { silentPollerLogger, type PollerLogger } from './poller-logger.js';

/** Where the poller reports; the Router implements it (health changes and poll observers). */
export interface PollerHost {
  setHealth(worker: Worker, healthy: boolean, reason: string): void;
  notifyPoll(worker: Worker, result: PollResult, durationSeconds: number): void;
}

export interface LoadPollerOptions {
  config: Pick<
    PollerConfig,
    'intervalSecs' | 'timeoutMs' | 'unhealthyAfter' | 'concurrency' | 'maxResponseBytes' | 'jitter'
  >;
  host: PollerHost;
  /** Stamps snapshots; must be the clock the policies judge staleness with. */
  now?: () => number;
  /** Jitter randomness. */
  rng?: Rng;
  logger?: PollerLogger;
  /** Builds each worker's load source; defaults to the engine registry. */
  createSource?: LoadSourceFactory;
}

interface WorkerState {
  readonly worker: Worker;
  readonly source: LoadSource;
  /** Aborted when the worker is removed or the poller stops: cancels its request and queue slot. */
  controller: AbortController;
  timer: NodeJS.Timeout | undefined;
  inflight: Promise<PollResult | undefined> | undefined;
  /** The failure last logged, so a worker failing the same way every second logs once. */
  problem: string | undefined;
  loggedEngine: string | undefined;
}

interface Outcome {
  result: PollResult;
  snapshot?: LoadSnapshot | undefined;
  error?: unknown;
}

function classify(err: unknown): PollResult {
  if (err instanceof PollRequestError) return err.result;
  if (err instanceof LoadParseError || err instanceof PrometheusParseError) return 'parse_error';
  return 'error';
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Polls every worker's load endpoint on the configured interval and feeds the results in:
 * snapshots replace `worker.load` (policies read them), consecutive failures drive health through
 * the host, and every finished poll is reported to the host's observers.
 *
 * Each worker has its own timer, re-armed only after its poll ends, so one worker never has two
 * polls in the air; the next poll is due one jittered interval after the previous one began. A
 * shared semaphore caps the polls in flight across the fleet. Requests go through the poller's
 * own keep-alive agents (at most one idle socket per worker, like a Prometheus scraper) so stop()
 * can close every socket it opened.
 */
export class LoadPoller {
  readonly #config: LoadPollerOptions['config'];
  readonly #host: PollerHost;
  readonly #now: () => number;
  readonly #rng: Rng;
  readonly #logger: PollerLogger;
  readonly #createSource: LoadSourceFactory;
  readonly #limit: ConcurrencyLimit;
  readonly #states = new Map<Worker, WorkerState>();
  #agents: { http: http.Agent; https: https.Agent } | undefined;
  #running = false;

  constructor(options: LoadPollerOptions) {
    this.#config = options.config;
    this.#host = options.host;
    this.#now = options.now ?? Date.now;
    this.#rng = options.rng ?? Math.random;
    this.#logger = options.logger ?? silentPollerLogger;
    this.#createSource = options.createSource ?? createLoadSource;
    this.#limit = new ConcurrencyLimit(options.config.concurrency);
  }

  get running(): boolean {
    return this.#running;
  }

  /** Polls waiting for a concurrency slot right now. */
  get queued(): number {
    return this.#limit.waiting;
  }

  has(worker: Worker): boolean {
    return this.#states.has(worker);
  }

  /** Starts tracking a worker; polling begins now if the poller is running, else on start(). */
  add(worker: Worker): void {
    if (this.#states.has(worker)) return;
    const state: WorkerState = {
      worker,
      source: this.#createSource(worker),
      controller: new AbortController(),
      timer: undefined,
      inflight: undefined,
      problem: undefined,
      loggedEngine: undefined,
    };
    this.#states.set(worker, state);
    if (this.#running) this.#scheduleFirst(state);
  }

  /** Stops polling a worker and forgets it: its timer, its in-flight request, its engine memory. */
  remove(worker: Worker): void {
    const state = this.#states.get(worker);
    if (!state) return;
    this.#states.delete(worker);
    clearTimeout(state.timer);
    state.timer = undefined;
    state.controller.abort();
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    for (const state of this.#states.values()) this.#scheduleFirst(state);
  }

  /** Cancels every timer and request, waits for them to unwind and closes every socket. */
  async stop(): Promise<void> {
    this.#running = false;
    const pending: Promise<unknown>[] = [];
    for (const state of this.#states.values()) {
      clearTimeout(state.timer);
      state.timer = undefined;
      state.controller.abort();
      state.controller = new AbortController();
      if (state.inflight) pending.push(state.inflight);
    }
    await Promise.all(pending);
    this.#agents?.http.destroy();
    this.#agents?.https.destroy();
    this.#agents = undefined;
  }

  /**
   * Polls a tracked worker now (or joins the poll already in flight) and resolves with its result;
   * undefined when the poll was cancelled or the worker is not tracked.
   */
  pollNow(worker: Worker): Promise<PollResult | undefined> {
    const state = this.#states.get(worker);
    if (!state) return Promise.resolve(undefined);
    return this.#poll(state);
  }

  #intervalMs(): number {
    const { intervalSecs, jitter } = this.#config;
    return Math.max(1, intervalSecs * 1000 * (1 + jitter * (2 * this.#rng() - 1)));
  }

  // Spread a fleet's first polls over the jitter window instead of firing them in one burst.
  #scheduleFirst(state: WorkerState): void {
    // A poll already in flight (pollNow) is joined by the first cycle, never doubled.
    if (state.timer) return;
    const { intervalSecs, jitter } = this.#config;
    this.#arm(state, this.#rng() * jitter * intervalSecs * 1000);
  }

  #arm(state: WorkerState, delayMs: number): void {
    state.timer = setTimeout(() => {
      state.timer = undefined;
      void this.#cycle(state);
    }, delayMs);
  }

  async #cycle(state: WorkerState): Promise<void> {
    const began = performance.now();
    await this.#poll(state);
    if (!this.#running || this.#states.get(state.worker) !== state || state.timer) return;
    this.#arm(state, Math.max(0, began + this.#intervalMs() - performance.now()));
  }

  #poll(state: WorkerState): Promise<PollResult | undefined> {
    if (!state.inflight) {
      state.inflight = this.#pollOnce(state).finally(() => {
        state.inflight = undefined;
      });
    }
    return state.inflight;
  }

  async #pollOnce(state: WorkerState): Promise<PollResult | undefined> {
    const signal = state.controller.signal;
    let release: () => void;
    try {
      release = await this.#limit.acquire(signal);
    } catch {
      return undefined;
    }
    const began = performance.now();
    let outcome: Outcome;
    try {
      outcome = { result: 'ok', snapshot: await state.source.read(this.#context(state.worker, signal)) };
    } catch (error) {
      outcome = { result: classify(error), error };
    } finally {
      release();
    }
    // Removed or stopped meanwhile: the worker's state is gone or frozen, report nothing.
    if (signal.aborted || outcome.error instanceof PollCancelledError) return undefined;
    if (this.#states.get(state.worker) !== state) return undefined;
    try {
      this.#apply(state, outcome);
      this.#host.notifyPoll(state.worker, outcome.result, (performance.now() - began) / 1000);
    } catch (err) {
      // An observer threw; the poller must keep running regardless.
      this.#logger.warn({ worker: state.worker.id, err: describe(err) }, 'load poll observer failed');
    }
    return outcome.result;
  }

  #context(worker: Worker, signal: AbortSignal): ReadContext {
    const headers: Record<string, string> = worker.apiKey ? { authorization: `Bearer ${worker.apiKey}` } : {};
    const agents = (this.#agents ??= {
      http: new http.Agent({ keepAlive: true, maxFreeSockets: 1 }),
      https: new https.Agent({ keepAlive: true, maxFreeSockets: 1 }),
    });
    const agent = worker.url.startsWith('https:') ? agents.https : agents.http;
    return {
      get: (path) =>
        fetchLimited(worker.url + path, {
          timeoutMs: this.#config.timeoutMs,
          maxBytes: this.#config.maxResponseBytes,
          headers,
          signal,
          agent,
        }),
      now: this.#now,
    };
  }

  #apply(state: WorkerState, outcome: Outcome): void {
    const { worker, source } = state;
    if (source.engine !== undefined && state.loggedEngine !== source.engine) {
      state.loggedEngine = source.engine;
      if (worker.engine === 'auto')
        this.#logger.info({ worker: worker.id, engine: source.engine }, 'engine detected');
    }
    if (outcome.result === 'ok') {
      // Replaced as a whole: the policies read worker.load without locks.
      if (outcome.snapshot !== undefined) worker.load = outcome.snapshot;
      worker.lastPollAt = this.#now();
      worker.consecutiveFailures = 0;
      if (state.problem !== undefined) {
        state.problem = undefined;
        this.#logger.info({ worker: worker.id }, 'load poll recovered');
      }
      if (!worker.healthy) this.#host.setHealth(worker, true, 'load poll succeeded');
      return;
    }
    // A failed poll leaves the previous snapshot alone: it ages out as stale, it is not cleared.
    const err = outcome.error;
    const status = err instanceof PollRequestError ? err.status : undefined;
    const key = `${outcome.result}:${status ?? ''}`;
    if (key !== state.problem) {
      state.problem = key;
      this.#logger.warn(
        {
          worker: worker.id,
          engine: source.engine ?? worker.engine,
          result: outcome.result,
          err: describe(err),
        },
        'load poll failed',
      );
    }
    if (err instanceof PollRequestError && err.countsAgainstHealth) {
      worker.consecutiveFailures += 1;
      if (worker.healthy && worker.consecutiveFailures >= this.#config.unhealthyAfter) {
        this.#host.setHealth(
          worker,
          false,
          `${worker.consecutiveFailures} consecutive failed load polls (${outcome.result}: ${describe(err)})`,
        );
      }
    }
  }
}
