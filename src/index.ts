export { createRouter, Router, STALE_AFTER_POLLS } from './router.js';
export type { RouterOptions, RouterObserver, WorkerRecord } from './router.js';
export {
  LlrError,
  ConfigError,
  NoHealthyWorkerError,
  InvalidWorkerUrlError,
  DuplicateWorkerError,
  UnknownWorkerError,
  UnknownPolicyError,
} from './core/errors.js';
export { Worker, parseWorkerUrl, ENGINE_NAMES } from './core/worker.js';
export type { WorkerSpec, EngineName } from './core/worker.js';
export { WorkerPool } from './core/worker-pool.js';
export { Lease } from './core/lease.js';
export type { LeaseOutcome } from './core/lease.js';
export type { LoadSnapshot, RankLoad } from './core/load-snapshot.js';
export { seededRng } from './core/random.js';
export type { Rng } from './core/random.js';
export type { Policy, PolicyEnv, RequestContext } from './policies/policy.js';
export { createPolicy, POLICY_NAMES } from './policies/registry.js';
export { configSchema } from './config/schema.js';
export type { Config, ConfigInput, PolicyConfig } from './config/schema.js';
export { validateConfig, DEFAULT_CONFIG } from './config/validate.js';
export { loadConfig } from './config/load-config.js';
export type { PollResult, FailureKind } from './router.js';
export { RouterMetrics } from './metrics/router-metrics.js';
export type { RouterMetricsOptions } from './metrics/router-metrics.js';
export { startStatusServer, statusRequestHandler } from './status/status-server.js';
export type { StatusServer, StatusServerOptions } from './status/status-server.js';
export { statusHandler, metricsHandler } from './status/express-handlers.js';
export { adminRequestHandler } from './status/admin-api.js';
export { DnsDiscovery } from './discovery/dns-discovery.js';
export type { DnsDiscoveryOptions, DnsResolver } from './discovery/dns-discovery.js';
export { createLogger } from './logging/logger.js';
export type { Logger, LogLevel } from './logging/logger.js';
export { logRouterEvents } from './logging/router-logging.js';
export { ExpectedWaitPolicy } from './policies/expected-wait.js';
export { LeastLoadPolicy } from './policies/least-load.js';
export { WeightedPolicy, GIE_PRESET } from './policies/weighted.js';
export { LoadPoller } from './poller/load-poller.js';
export type { LoadPollerOptions, PollerHost } from './poller/load-poller.js';
export { parsePrometheusText, PromDocument } from './poller/prometheus-text.js';
export type { PromSample, PromParseOptions } from './poller/prometheus-text.js';
export {
  PrometheusParseError,
  LoadParseError,
  PollRequestError,
  PollCancelledError,
} from './poller/errors.js';
export { POLL_RESULTS } from './poller/poll-result.js';
export type { PollerLogger } from './poller/poller-logger.js';
export type { LoadSource, ReadContext } from './poller/engine.js';
export { createLoadSource } from './poller/engines/registry.js';
export type { LoadFieldPaths } from './core/worker.js';
export { startFleet } from './sim/fleet.js';
export type { SimFleet } from './sim/fleet.js';
export { startSimServer, SimServer } from './sim/sim-server.js';
export type { SimWorkerSpec } from './sim/sim-server.js';
export { SCENARIO_NAMES } from './sim/scenarios.js';
export { Gateway } from './gateway.js';
export type { GatewayOptions, Listener } from './gateway.js';
export type { ReconfigureResult, WorkerSource } from './router.js';
export * from './express/index.js';
export { createExtProcServer, LIVENESS_SERVICE, READINESS_SERVICE } from './envoy/ext-proc-server.js';
export type { ExtProcServer, ExtProcServerOptions } from './envoy/ext-proc-server.js';
export { ExtProcListenError } from './envoy/errors.js';
export { bodyFields, parseJsonBody } from './policies/body-fields.js';
export { OraclePolicy } from './sim/oracle-policy.js';
export { SharedInFlight, SHARED_STATE_OPS } from './state/shared-in-flight.js';
export type { SharedInFlightOptions, SharedStateHost, SharedStateOp } from './state/shared-in-flight.js';
export { newReplicaId } from './state/replica-id.js';
export type { RedisStateConfig } from './config/schema.js';
export { UnknownModelError } from './core/errors.js';
