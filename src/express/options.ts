import type { IncomingMessage } from 'node:http';
import { Registry } from 'prom-client';
import { z } from 'zod';
import { configSchema, policySchema, workerSpecSchema } from '../config/schema.js';
import { parseOrThrow } from '../config/validate.js';
import { ConfigError } from '../core/errors.js';
import { Router } from '../router.js';
import type { ProxyObserver } from './observer.js';

/** Returns the path (with query) the worker should receive, or undefined to keep it. */
export type PathRewriteFunction = (path: string, req: IncomingMessage) => string | undefined;
/** `{ '^/v1': '/api/v1' }`: the first key (a regular expression) that matches is replaced. */
export type PathRewriteRules = Record<string, string>;

const MIB = 1024 * 1024;
const MAX_BYTES = 1024 * MIB;
// setTimeout silently turns anything above 2^31 - 1 ms into 1 ms.
const MAX_MS = 2 ** 31 - 1;

const bytes = (fallback: number) =>
  z
    .number({ error: `must be an integer number of bytes in 0..${MAX_BYTES}` })
    .int({ error: `must be an integer number of bytes in 0..${MAX_BYTES}` })
    .min(0, { error: `must be an integer number of bytes in 0..${MAX_BYTES}` })
    .max(MAX_BYTES, { error: `must be an integer number of bytes in 0..${MAX_BYTES}` })
    .default(fallback);

const millis = (fallback: number) =>
  z
    .number({ error: `must be a number of milliseconds in 0..${MAX_MS} (0 = no timeout)` })
    .min(0, { error: `must be a number of milliseconds in 0..${MAX_MS} (0 = no timeout)` })
    .max(MAX_MS, { error: `must be a number of milliseconds in 0..${MAX_MS} (0 = no timeout)` })
    .default(fallback);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

const pathRewriteSchema = z
  .custom<PathRewriteRules | PathRewriteFunction>(
    (v) =>
      typeof v === 'function' || (isPlainObject(v) && Object.values(v).every((r) => typeof r === 'string')),
    { error: 'must be a function (path, req) => string | undefined or an object of regex -> replacement' },
  )
  .superRefine((v, ctx) => {
    if (typeof v === 'function') return;
    for (const key of Object.keys(v)) {
      try {
        new RegExp(key);
      } catch (err) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `invalid regular expression: ${(err as Error).message}`,
        });
      }
    }
  });

const timeoutsSchema = z.strictObject({
  /** TCP connect to the worker; expiry counts as a connection failure (retried). */
  connectTimeoutMs: millis(10_000),
  /** No byte either way on the upstream socket for this long. Off by default: prefill can be silent for minutes. */
  idleTimeoutMs: millis(0),
  /** The whole upstream exchange. Off by default so long generations are never cut. */
  proxyTimeoutMs: millis(0),
});

const retrySchema = z.strictObject({
  /** Replay a request once on another worker when the first failed before any response byte. */
  enabled: z.boolean({ error: 'must be true or false' }).default(true),
  /** Bodies up to this size (by content-length) are buffered so they can be replayed; larger ones stream, unretried. */
  maxBodyBytes: bytes(8 * MIB),
});

// Duck-typed as well as instanceof, so a registry from a second copy of prom-client still passes.
const isRegistry = (v: unknown): v is Registry =>
  v instanceof Registry ||
  (typeof v === 'object' &&
    v !== null &&
    typeof (v as Registry).metrics === 'function' &&
    typeof (v as Registry).registerMetric === 'function');

const isObserver = (v: unknown): v is ProxyObserver =>
  typeof v === 'object' &&
  v !== null &&
  (['onUpstreamError', 'onUpstreamResponse', 'onReject'] as const).every(
    (k) => (v as ProxyObserver)[k] === undefined || typeof (v as ProxyObserver)[k] === 'function',
  );

export const middlewareOptionsSchema = z.strictObject({
  workers: z.array(workerSpecSchema).optional(),
  policy: policySchema.optional(),
  poller: configSchema.shape.poller.optional(),
  router: z
    .custom<Router>((v) => v instanceof Router, { error: 'must be a Router from createRouter()' })
    .optional(),
  metrics: z.custom<Registry>(isRegistry, { error: 'must be a prom-client Registry' }).optional(),
  observer: z.custom<ProxyObserver>(isObserver, { error: 'must be an object of on... callbacks' }).optional(),
  pathRewrite: pathRewriteSchema.optional(),
  timeouts: timeoutsSchema.default(() => timeoutsSchema.parse({})),
  retry: retrySchema.default(() => retrySchema.parse({})),
  /** Reuse upstream connections (an agent per middleware); off opens one connection per request. */
  keepAlive: z.boolean({ error: 'must be true or false' }).default(true),
  /** Largest body read for body-aware routing (policies with needsBody); larger requests get a 413. */
  maxBodyBytes: bytes(16 * MIB),
});

export type MiddlewareOptionsInput = z.input<typeof middlewareOptionsSchema>;
export type MiddlewareOptions = z.output<typeof middlewareOptionsSchema>;
export type TimeoutOptions = MiddlewareOptions['timeouts'];
export type RetryOptions = MiddlewareOptions['retry'];

const ROUTER_FIELDS = ['workers', 'policy', 'poller'] as const;

/** Validates middleware options; throws ConfigError naming the field, the value and the reason. */
export function parseMiddlewareOptions(input: unknown): MiddlewareOptions {
  const raw = input ?? {};
  if (!isPlainObject(raw)) throw new ConfigError('', 'options must be an object');
  if (raw.router !== undefined) {
    // A shared router already has its workers and policy; silently ignoring ours would surprise.
    for (const field of ROUTER_FIELDS) {
      if (raw[field] !== undefined) {
        throw new ConfigError(field, 'cannot be combined with router (configure the shared Router instead)');
      }
    }
  }
  return parseOrThrow(middlewareOptionsSchema, raw);
}
