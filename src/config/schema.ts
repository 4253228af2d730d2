import { z } from 'zod';
import { ENGINE_NAMES, parseWorkerUrl } from '../core/worker.js';

/**
 * The one schema for the config file, the CLI flags and the programmatic API. Every default lives
 * here and nowhere else, so the three entry points cannot disagree.
 */

export const POLICY_NAMES = [
  'random',
  'round_robin',
  'power_of_two',
  'least_load',
  'weighted',
  'consistent_hashing',
  'manual',
  'prefix_hash',
  'cache_aware',
] as const;
export const LEAST_LOAD_MODES = ['seed', 'expected_wait'] as const;
export const SCORER_NAMES = ['queue', 'kv', 'in_flight', 'prefix'] as const;
export const WEIGHTED_PRESETS = ['gie', 'gie_load'] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

const finiteAtLeast = (min: number) =>
  z
    .number({ error: `must be finite and >= ${min}` })
    .refine((v) => v >= min, { error: `must be finite and >= ${min}` });

const finitePositive = () =>
  z.number({ error: 'must be finite and > 0' }).refine((v) => v > 0, { error: 'must be finite and > 0' });

const intInRange = (min: number, max: number) =>
  z
    .number({ error: `must be an integer in ${min}..${max}` })
    .int({ error: `must be an integer in ${min}..${max}` })
    .min(min, { error: `must be an integer in ${min}..${max}` })
    .max(max, { error: `must be an integer in ${min}..${max}` });

const port = () => intInRange(0, 65535);

const workerUrl = z.string({ error: 'must be a URL string' }).superRefine((url, ctx) => {
  try {
    parseWorkerUrl(url);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
});

const workerObject = z.strictObject({
  url: workerUrl,
  engine: z.enum(ENGINE_NAMES, { error: `must be one of ${ENGINE_NAMES.join(', ')}` }).default('auto'),
  apiKey: z.string().min(1).optional(),
  weight: finitePositive().default(1),
  models: z.array(z.string().min(1)).optional(),
  /** `json` engine: path of the load endpoint (default /load). */
  loadPath: z
    .string()
    .regex(/^\/[^\s#]*$/, { error: 'must be a path starting with /' })
    .optional(),
  /** `json` engine: dot paths of each value in the load document (default: LoadSnapshot names). */
  loadFields: z
    .strictObject({
      ranks: z.string().min(1).optional(),
      kvUsage: z.string().min(1).optional(),
      running: z.string().min(1).optional(),
      waiting: z.string().min(1).optional(),
      waitingTokens: z.string().min(1).optional(),
      throughput: z.string().min(1).optional(),
      capacityTokens: z.string().min(1).optional(),
    })
    .optional(),
  /** `tgi` engine: the server's --max-batch-total-tokens, to turn its batch budget into a KV usage. */
  maxBatchTotalTokens: intInRange(1, 2 ** 31 - 1).optional(),
});

export const workerSpecSchema = z.preprocess((v) => (typeof v === 'string' ? { url: v } : v), workerObject);

const leastLoadPolicy = z.strictObject({
  name: z.literal('least_load'),
  /** seed: in_flight + lambda * k / (1 - k); expected_wait: queued token work over throughput. */
  // expected_wait is the default because it measured best across fleets (README, Benchmarks).
  mode: z
    .enum(LEAST_LOAD_MODES, { error: `must be one of ${LEAST_LOAD_MODES.join(', ')}` })
    .default('expected_wait'),
  /** Weight of the KV-pressure barrier lambda * k / (1 - k), in units of in-flight requests (seed). */
  lambda: finiteAtLeast(0).default(1.5),
  /** The same barrier's weight in seconds (expected_wait). */
  lambdaT: finiteAtLeast(0).default(0.15),
  /** Tokens/s assumed where a worker reports no throughput (expected_wait). */
  fallbackThroughput: finitePositive().default(2000),
  /** Prompt size assumed for requests of unknown size (expected_wait). */
  meanPromptTokens: finitePositive().default(1024),
  /** Read request bodies for their prompt size (expected_wait; front doors then buffer bodies). */
  bodyAware: z.boolean({ error: 'must be true or false' }).default(false),
});
const weightedPolicy = z.strictObject({
  name: z.literal('weighted'),
  /** `gie`: the Gateway API Inference Extension's default chain (queue 2, kv 2, prefix 3); `gie_load` without prefix. */
  preset: z.enum(WEIGHTED_PRESETS, { error: `must be one of ${WEIGHTED_PRESETS.join(', ')}` }).optional(),
  scorers: z
    .array(
      z.strictObject({
        name: z.enum(SCORER_NAMES, { error: `must be one of ${SCORER_NAMES.join(', ')}` }),
        weight: finitePositive(),
      }),
    )
    .min(1, { error: 'needs at least one scorer' })
    .optional(),
});
const headerList = z
  .array(z.string().regex(/^[a-z0-9-]+$/, { error: 'must be a lower-case HTTP header name' }))
  .min(1, { error: 'needs at least one header' })
  .default(['x-session-id', 'x-routing-key']);
const virtualNodes = intInRange(1, 10000).default(150);
const fraction = (fallback: number) =>
  z
    .number({ error: 'must be in 0..1' })
    .min(0, { error: 'must be in 0..1' })
    .max(1, { error: 'must be in 0..1' })
    .default(fallback);

const consistentHashingPolicy = z.strictObject({
  name: z.literal('consistent_hashing'),
  /** Headers that carry the routing key, first present wins; then `authorization`. */
  headers: headerList,
  virtualNodes,
});
const manualPolicy = z.strictObject({
  name: z.literal('manual'),
  headers: headerList,
  /** How the first request of a key picks its worker. */
  subPolicy: z
    .enum(['random', 'least_in_flight'], { error: 'must be random or least_in_flight' })
    .default('least_in_flight'),
  ttlSecs: finitePositive().default(4 * 3600),
  maxKeys: intInRange(1, 10_000_000).default(100_000),
});
const prefixHashPolicy = z.strictObject({
  name: z.literal('prefix_hash'),
  prefixChars: intInRange(1, 1_000_000).default(256),
  /** A worker over loadFactor times the mean in-flight is skipped (bounded-load hashing). */
  loadFactor: finiteAtLeast(1).default(1.25),
  virtualNodes,
});
const cacheAwarePolicy = z.strictObject({
  name: z.literal('cache_aware'),
  /** Route to the longest prefix match when it covers more than this share of the prompt. */
  cacheThreshold: fraction(0.3),
  balanceAbsThreshold: finiteAtLeast(0).default(64),
  balanceRelThreshold: finiteAtLeast(1).default(1.5),
  kvOverloadThreshold: fraction(0.95),
  /** Prompt characters remembered per worker (LRU beyond it). */
  maxCharsPerWorker: intInRange(1, 2 ** 31 - 1).default(2_000_000),
});
const randomPolicy = z.strictObject({ name: z.literal('random') });
const roundRobinPolicy = z.strictObject({ name: z.literal('round_robin') });
const powerOfTwoPolicy = z.strictObject({ name: z.literal('power_of_two') });

export const policySchema = z.preprocess(
  (v) => (typeof v === 'string' ? { name: v } : v),
  z.discriminatedUnion(
    'name',
    [
      leastLoadPolicy,
      randomPolicy,
      roundRobinPolicy,
      powerOfTwoPolicy,
      weightedPolicy,
      consistentHashingPolicy,
      manualPolicy,
      prefixHashPolicy,
      cacheAwarePolicy,
    ],
    {
      error: (issue) =>
        issue.code === 'invalid_union'
          ? `unknown policy; valid policies: ${POLICY_NAMES.join(', ')}`
          : 'must be a policy name or an object with a name',
    },
  ),
);

const pollerSchema = z.strictObject({
  intervalSecs: finitePositive().default(1),
  timeoutMs: finitePositive().default(1000),
  /** Consecutive failed polls before a worker is taken out of rotation. */
  unhealthyAfter: intInRange(1, 1000).default(3),
  /** Most polls in the air at once, so a large fleet does not open a socket per worker at once. */
  concurrency: intInRange(1, 10000).default(64),
  maxResponseBytes: intInRange(1024, 256 * 1024 * 1024).default(4 * 1024 * 1024),
  /** Fraction of the interval each poll is randomly shifted by, to keep a fleet from polling in lockstep. */
  jitter: z
    .number({ error: 'must be in 0..1' })
    .min(0, { error: 'must be in 0..1' })
    .max(1, { error: 'must be in 0..1' })
    .default(0.1),
});

const envoySchema = z.strictObject({
  port: port().default(9002),
  destinationHeader: z
    .string()
    .regex(/^[a-z0-9-]+$/, { error: 'must be a lower-case HTTP header name' })
    .default('x-gateway-destination-endpoint'),
  fallbacks: intInRange(0, 16).default(0),
});

const proxySchema = z.strictObject({ port: port().default(0) });

const metricsSchema = z.strictObject({
  port: port().default(9090),
  prefix: z
    .string()
    .regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$|^$/, { error: 'must be a valid Prometheus metric name prefix' })
    .default('llr_'),
});

const adminSchema = z.strictObject({
  /** Bearer token for POST/DELETE /workers; the admin API is off without it. */
  token: z.string({ error: 'must be a string' }).min(16, { error: 'must be at least 16 characters' }),
});

const dnsDiscoverySchema = z.strictObject({
  /** A name to resolve, e.g. a Kubernetes headless service; names starting with `_` are SRV lookups. */
  name: z.string().min(1, { error: 'must not be empty' }),
  port: intInRange(1, 65535).optional(),
  srv: z.boolean().optional(),
  intervalSecs: finitePositive().default(10),
  engine: z.enum(ENGINE_NAMES, { error: `must be one of ${ENGINE_NAMES.join(', ')}` }).default('auto'),
  scheme: z.enum(['http', 'https'], { error: 'must be http or https' }).default('http'),
});

const logSchema = z.strictObject({
  level: z
    .enum(['debug', 'info', 'warn', 'error', 'silent'], {
      error: 'must be debug, info, warn, error or silent',
    })
    .default('info'),
});

const shutdownSchema = z.strictObject({
  /** How long SIGTERM waits for requests in flight before exiting anyway. */
  drainTimeoutSecs: finiteAtLeast(0).default(30),
});

const redisUrl = z.string({ error: 'must be a redis:// or rediss:// URL' }).refine(
  (url) => {
    try {
      const { protocol, hostname } = new URL(url);
      return (protocol === 'redis:' || protocol === 'rediss:') && hostname !== '';
    } catch {
      return false;
    }
  },
  { error: 'must be a redis:// or rediss:// URL' },
);

const redisStateSchema = z.strictObject({
  /** The Redis every replica of this router shares, e.g. redis://redis:6379/0. */
  url: redisUrl,
  /** Prepended to every key, so several router fleets can share one Redis. */
  keyPrefix: z
    .string({ error: 'must be a string' })
    .regex(/^[^\s]*$/, { error: 'must not contain whitespace' })
    .default('llr:'),
  /** How often the fleet-wide in-flight view is re-read, ms. */
  refreshMs: intInRange(1, 60_000).default(5),
  /** A replica that stops heartbeating (crash, partition) drops out of the counts after this long. */
  heartbeatTtlSecs: z
    .number({ error: 'must be finite and in 0.1..3600' })
    .min(0.1, { error: 'must be finite and in 0.1..3600' })
    .max(3600, { error: 'must be finite and in 0.1..3600' })
    .default(3),
});

const stateSchema = z.strictObject({ redis: redisStateSchema.optional() });

export const configSchema = z.strictObject({
  workers: z.array(workerSpecSchema).default([]),
  policy: policySchema.default(() => policySchema.parse('least_load')),
  poller: pollerSchema.default(() => pollerSchema.parse({})),
  envoy: envoySchema.default(() => envoySchema.parse({})),
  proxy: proxySchema.default(() => proxySchema.parse({})),
  metrics: metricsSchema.default(() => metricsSchema.parse({})),
  host: z.string().min(1).default('0.0.0.0'),
  admin: adminSchema.optional(),
  discovery: z.strictObject({ dns: dnsDiscoverySchema.optional() }).optional(),
  log: logSchema.default(() => logSchema.parse({})),
  shutdown: shutdownSchema.default(() => shutdownSchema.parse({})),
  /** Shared state between router replicas (in-flight counts through Redis); off when absent. */
  state: stateSchema.optional(),
  /** Per-model overrides, e.g. `{ llama-70b: { policy: cache_aware } }`; other models use `policy`. */
  models: z.record(z.string().min(1), z.strictObject({ policy: policySchema })).optional(),
});

/** What users write: every field optional, policies and workers also as bare strings. */
export type ConfigInput = z.input<typeof configSchema>;
/** What the rest of the code gets: every default filled in. */
export type Config = z.output<typeof configSchema>;
export type PolicyConfig = Config['policy'];
/** A policy as users write it: a name, or an object with the name and any parameters. */
export type PolicyInput = z.input<typeof policySchema>;
export type WorkerConfig = z.output<typeof workerSpecSchema>;
export type PollerConfig = Config['poller'];
export type RedisStateConfig = z.output<typeof redisStateSchema>;
