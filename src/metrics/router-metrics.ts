import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Worker } from '../core/worker.js';
import { POLL_RESULTS } from '../poller/poll-result.js';
import type { Router } from '../router.js';
import { SHARED_STATE_OPS } from '../state/shared-in-flight.js';

export interface RouterMetricsOptions {
  /** Defaults to a private registry: the global default one only when the user passes it. */
  registry?: Registry;
  /** Metric name prefix, default `llr_`. */
  prefix?: string;
}

const OUTCOMES = ['success', 'failure', 'cancelled'] as const;
const FAILURE_KINDS = ['connect', 'status'] as const;

/**
 * The contract's metric set, fed by router observer hooks. Per-worker gauges are filled at scrape
 * time from the router's own state (nothing extra on the pick path), and every series of a
 * removed worker is deleted so dashboards never show ghosts.
 */
export class RouterMetrics {
  readonly registry: Registry;
  readonly prefix: string;
  readonly #unobserve: () => void;
  readonly #requests: Counter<'worker' | 'policy'>;
  readonly #outcomes: Counter<'worker' | 'outcome'>;
  readonly #upstreamErrors: Counter<'worker' | 'kind'>;
  readonly #polls: Counter<'worker' | 'result'>;
  readonly #healthChanges: Counter<'worker' | 'healthy'>;
  readonly #perWorkerGauges: Gauge<'worker'>[];
  /** Every policy label used so far (a config reload can change the policy). */
  readonly #policies = new Set<string>();
  readonly #proxyErrors: Counter<'worker' | 'phase'>;
  readonly #rejections: Counter<'front_door' | 'status' | 'code'>;
  readonly #streams: Counter<'event'>;
  readonly #activeStreams: Gauge;
  readonly #sharedStateErrors: Counter<'op'>;

  constructor(router: Router, options: RouterMetricsOptions = {}) {
    const registry = options.registry ?? new Registry();
    const p = options.prefix ?? router.config.metrics.prefix;
    this.registry = registry;
    this.prefix = p;
    const registers = [registry];

    this.#requests = new Counter({
      name: `${p}requests_total`,
      help: 'Requests routed, by chosen worker and policy.',
      labelNames: ['worker', 'policy'],
      registers,
    });
    this.#outcomes = new Counter({
      name: `${p}request_outcomes_total`,
      help: 'Routed requests that ended, by worker and outcome (success, failure, cancelled).',
      labelNames: ['worker', 'outcome'],
      registers,
    });
    this.#upstreamErrors = new Counter({
      name: `${p}upstream_errors_total`,
      help: 'Failures front doors saw talking to a worker (connect: refused or reset; status: 5xx).',
      labelNames: ['worker', 'kind'],
      registers,
    });
    const noHealthy = new Counter({
      name: `${p}no_healthy_worker_total`,
      help: 'Requests refused because no healthy worker was available.',
      registers,
    });
    const pickDuration = new Histogram({
      name: `${p}pick_duration_seconds`,
      help: 'Time spent choosing a worker, policy included.',
      buckets: [1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 1e-2],
      registers,
    });
    this.#polls = new Counter({
      name: `${p}load_polls_total`,
      help: 'Load polls, by worker and result.',
      labelNames: ['worker', 'result'],
      registers,
    });
    const pollDuration = new Histogram({
      name: `${p}load_poll_duration_seconds`,
      help: 'Duration of load polls, all workers.',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.#healthChanges = new Counter({
      name: `${p}worker_health_changes_total`,
      help: 'Worker health transitions, by the health the worker moved to.',
      labelNames: ['worker', 'healthy'],
      registers,
    });

    this.#proxyErrors = new Counter({
      name: `${p}proxy_upstream_errors_total`,
      help: 'HTTP proxy errors talking to a worker, by phase (request: before any response byte).',
      labelNames: ['worker', 'phase'],
      registers,
    });
    this.#rejections = new Counter({
      name: `${p}rejected_requests_total`,
      help: 'Requests a front door answered itself (no healthy worker, body too large, ...).',
      labelNames: ['front_door', 'status', 'code'],
      registers,
    });
    this.#streams = new Counter({
      name: `${p}ext_proc_streams_total`,
      help: 'Envoy ext_proc streams, by event (opened, closed).',
      labelNames: ['event'],
      registers,
    });
    this.#activeStreams = new Gauge({
      name: `${p}ext_proc_active_streams`,
      help: 'Envoy ext_proc streams open now.',
      registers,
    });

    this.#sharedStateErrors = new Counter({
      name: `${p}shared_state_errors_total`,
      help: 'Failed Redis operations of the shared in-flight state, by operation (connection, write, refresh).',
      labelNames: ['op'],
      registers,
    });
    if (router.sharedState) for (const op of SHARED_STATE_OPS) this.#sharedStateErrors.inc({ op }, 0);
    const degraded = new Gauge({
      name: `${p}shared_state_degraded`,
      help: '1 while shared state is configured but Redis is out of reach (routing on the local view), else 0.',
      registers,
      collect() {
        this.set(router.sharedState?.degraded ? 1 : 0);
      },
    });
    void degraded;

    const gauge = (name: string, help: string, read: (w: Worker) => number | undefined): Gauge<'worker'> => {
      const g: Gauge<'worker'> = new Gauge({
        name: `${p}${name}`,
        help,
        labelNames: ['worker'],
        registers,
        collect() {
          g.reset();
          for (const w of router.pool.list()) {
            const v = read(w);
            if (v !== undefined && Number.isFinite(v)) g.set({ worker: w.id }, v);
          }
        },
      });
      return g;
    };
    this.#perWorkerGauges = [
      gauge(
        'worker_in_flight',
        "Requests in flight on the worker: this router's, plus other replicas' when state is shared.",
        (w) => w.inFlight,
      ),
      gauge(
        'worker_kv_usage_ratio',
        'Last reported KV-cache usage, 0..1 (absent when unknown).',
        (w) => w.load?.kvUsage,
      ),
      gauge('worker_running_requests', 'Last reported running requests.', (w) => w.load?.running),
      gauge('worker_waiting_requests', 'Last reported queued requests.', (w) => w.load?.waiting),
      gauge('worker_healthy', '1 when the worker takes new requests, else 0.', (w) =>
        w.healthy && !w.draining ? 1 : 0,
      ),
    ];
    const workers = new Gauge({
      name: `${p}workers`,
      help: 'Workers in the pool, by health.',
      labelNames: ['state'],
      registers,
      collect() {
        let healthy = 0;
        for (const w of router.pool.list()) if (w.healthy && !w.draining) healthy += 1;
        this.set({ state: 'healthy' }, healthy);
        this.set({ state: 'unhealthy' }, router.pool.size - healthy);
      },
    });
    void workers;

    this.#unobserve = router.observe({
      onPick: (lease, policy, ns) => {
        this.#policies.add(policy);
        this.#requests.inc({ worker: lease.worker.id, policy });
        pickDuration.observe(ns / 1e9);
      },
      onRelease: (lease, outcome) => this.#outcomes.inc({ worker: lease.worker.id, outcome }),
      onNoHealthyWorker: () => noHealthy.inc(),
      onPoll: (worker, result, seconds) => {
        this.#polls.inc({ worker: worker.id, result });
        pollDuration.observe(seconds);
      },
      onHealthChange: (worker, healthy) =>
        this.#healthChanges.inc({ worker: worker.id, healthy: String(healthy) }),
      onFailureReport: (worker, kind) => this.#upstreamErrors.inc({ worker: worker.id, kind }),
      onRemove: (worker) => this.#forget(worker.id),
      onSharedStateError: (op) => this.#sharedStateErrors.inc({ op }),
    });
  }

  /** Front-door events that the router itself does not see. */
  proxyUpstreamError(worker: string, phase: string): void {
    this.#proxyErrors.inc({ worker, phase });
  }

  rejected(frontDoor: 'proxy' | 'ext_proc', status: number, code: string): void {
    this.#rejections.inc({ front_door: frontDoor, status: String(status), code });
  }

  streamOpened(): void {
    this.#streams.inc({ event: 'opened' });
    this.#activeStreams.inc();
  }

  streamClosed(): void {
    this.#streams.inc({ event: 'closed' });
    this.#activeStreams.dec();
  }

  #forget(worker: string): void {
    for (const phase of ['request', 'response']) this.#proxyErrors.remove({ worker, phase });
    for (const policy of this.#policies) this.#requests.remove({ worker, policy });
    for (const outcome of OUTCOMES) this.#outcomes.remove({ worker, outcome });
    for (const kind of FAILURE_KINDS) this.#upstreamErrors.remove({ worker, kind });
    for (const result of POLL_RESULTS) this.#polls.remove({ worker, result });
    for (const healthy of ['true', 'false']) this.#healthChanges.remove({ worker, healthy });
    for (const g of this.#perWorkerGauges) g.remove({ worker });
  }

  /** Prometheus text exposition of this router's registry. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops observing the router; the registry keeps its last values. */
  close(): void {
    this.#unobserve();
  }
}
