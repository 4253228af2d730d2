// Real workers, a real router and a real ext_proc server on port 0, closed after each test.
import type { TestContext } from 'node:test';
import type { ConfigInput } from '../../src/config/schema.js';
import { validateConfig } from '../../src/config/validate.js';
import type { LeaseOutcome } from '../../src/core/lease.js';
import { seededRng } from '../../src/core/random.js';
import type { Worker } from '../../src/core/worker.js';
import {
  createExtProcServer,
  type ExtProcServer,
  type ExtProcServerOptions,
} from '../../src/envoy/ext-proc-server.js';
import type { Policy, RequestContext } from '../../src/policies/policy.js';
import { Router } from '../../src/router.js';
import { EnvoyClient } from './envoy-client.js';
import { startWorkers, type TestWorker } from './workers.js';

/** A router over `config` with a seeded rng (workers default to none). */
export function testRouter(config: ConfigInput): Router {
  return new Router(validateConfig(config), { rng: seededRng(7) });
}

export type RecordingPolicy = Policy & { seen: RequestContext[] };

/**
 * Turns the router's live policy into one that always takes the first candidate and records every
 * context it was asked with, with `needsBody` as given. The instance is patched rather than a
 * policy added to src/policies: the Router builds its policy privately from the config.
 */
export function recordPicks(router: Router, needsBody: boolean): RecordingPolicy {
  const seen: RequestContext[] = [];
  const policy = router.policy as RecordingPolicy;
  Object.defineProperties(policy, {
    needsBody: { value: needsBody, configurable: true },
    seen: { value: seen, configurable: true },
    select: {
      value: (candidates: readonly Worker[], ctx: RequestContext) => {
        seen.push(ctx);
        return candidates[0];
      },
      configurable: true,
    },
  });
  return policy;
}

export interface Fixture {
  workers: TestWorker[];
  router: Router;
  server: ExtProcServer;
  client: EnvoyClient;
  /** Every release outcome, in order. */
  outcomes: LeaseOutcome[];
  /** Set when the fixture was asked to record. */
  recorded: RecordingPolicy | undefined;
  inFlight(): number[];
}

export async function fixture(
  t: TestContext,
  opts: {
    workers?: number;
    /** Engine of every worker; 'vllm' lets the real poller read the test workers' /metrics. */
    engine?: 'vllm' | 'none';
    /** Record contexts and always pick the first worker; `needsBody` as given. */
    record?: { needsBody: boolean };
    config?: ConfigInput;
    server?: ExtProcServerOptions;
    client?: 'official' | 'ours';
  } = {},
): Promise<Fixture> {
  const workers = await startWorkers(opts.workers ?? 3);
  const router = testRouter({
    workers: workers.map((w) => ({ url: w.url, engine: opts.engine ?? 'none' })),
    ...opts.config,
  });
  const recorded = opts.record ? recordPicks(router, opts.record.needsBody) : undefined;
  const outcomes: LeaseOutcome[] = [];
  router.observe({ onRelease: (_lease, outcome) => outcomes.push(outcome) });
  const server = await createExtProcServer(router, { port: 0, host: '127.0.0.1', ...opts.server });
  const client = new EnvoyClient(server.port, opts.client);
  t.after(async () => {
    client.close();
    await server.close();
    await router.stop();
    await Promise.all(workers.map((w) => w.close()));
  });
  return {
    workers,
    router,
    server,
    client,
    outcomes,
    recorded,
    inFlight: () => router.pool.list().map((w) => w.inFlight),
  };
}
