import { Agent } from 'node:http';
import type { PolicyInput } from '../config/schema.js';
import { validateConfig } from '../config/validate.js';
import { seededRng } from '../core/random.js';
import { startProxyServer } from '../express/standalone-proxy.js';
import { Router } from '../router.js';
import { estimateFleetCapacity } from './capacity.js';
import { startFleet, type SimFleet } from './fleet.js';
import { runLoad, type TargetPicker } from './load-generator.js';
import type { LoadSummary } from './load-summary.js';
import { OraclePolicy } from './oracle-policy.js';
import { scenarioWorkers, type ScenarioName } from './scenarios.js';
import type { SimStats } from './sim-server.js';
import { createWorkload, sizeSampler, type WorkloadItem } from './workload.js';

/** How requests reach the router in a comparison run. */
export type FrontDoorKind = 'proxy' | 'ext_proc';

export interface ComparisonCase {
  /** Row label, e.g. `least_load λ=1.5`. */
  label: string;
  /** A policy config, or `oracle` (true simulator state, the practical limit). */
  policy: PolicyInput | 'oracle';
  /** Poll period in model seconds (default 1). */
  pollIntervalSecs?: number;
  frontDoor?: FrontDoorKind;
}

/** A workload other than the standard chat mix, e.g. multi-turn conversations. */
export interface ComparisonWorkload {
  /** The fleet's capacity for this workload, requests/s: what `load` is a fraction of. */
  capacityRps: number;
  /** The seeded requests at an offered rate (requests per model second); the same for every case. */
  create(rateRps: number): readonly WorkloadItem[];
}

export interface ComparisonOptions {
  scenario: ScenarioName;
  seed: number;
  /** Model seconds of Poisson arrivals. */
  durationSec: number;
  /** Offered load as a fraction of the fleet's estimated capacity. */
  load: number;
  /** Model time runs this much faster than wall time; poll periods shrink with it. */
  speedup: number;
  /** Replaces the standard chat mix (and its capacity estimate); `seed` is then the workload's business. */
  workload?: ComparisonWorkload;
  /** Receives every worker's final simulator stats (e.g. prefix-cache counters) before the fleet closes. */
  onStats?(stats: readonly SimStats[]): void;
}

export interface CaseResult {
  label: string;
  scenario: ScenarioName;
  seed: number;
  frontDoor: FrontDoorKind;
  pollIntervalSecs: number;
  rateRps: number;
  capacityRps: number;
  summary: LoadSummary;
  /** Every successful request's TTFT, model ms, for pooling across seeds. */
  ttftMs: number[];
  preemptions: number;
  /** Load polls the router made during the run. */
  polls: number;
  /** Times the simulator fell behind wall time: nonzero means the machine, not the policy, shaped the tail. */
  lagResyncs: number;
  wallMs: number;
}

/**
 * An ext_proc-style front door for the comparison: given a router, returns a picker that asks it
 * for the destination and later ends the exchange. Supplied by the Envoy module so this file does
 * not depend on gRPC.
 */
export type ExtProcPickerFactory = (
  router: Router,
) => Promise<{ picker: TargetPicker; close(): Promise<void> }>;

let extProcFactory: ExtProcPickerFactory | undefined;

/** Registers how `frontDoor: 'ext_proc'` cases reach the router. */
export function useExtProcFrontDoor(factory: ExtProcPickerFactory): void {
  extProcFactory = factory;
}

/** Capacity of a scenario's fleet in requests/s for the standard chat mix (deterministic). */
export function scenarioCapacity(scenario: ScenarioName, seed: number): number {
  return estimateFleetCapacity(scenarioWorkers(scenario), () => {
    const s = sizeSampler(seed + 1000);
    return () => s();
  }).requestsPerSec;
}

/**
 * Waits until every worker not being drained has had a good poll, so a run starts with load
 * reports in place. Resolves false on timeout or abort.
 */
export async function waitForFirstPolls(
  router: Router,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (router.pool.list().some((w) => !w.draining && w.lastPollAt === undefined)) {
    if (Date.now() > until || signal?.aborted) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

/**
 * One policy on one fleet: a fresh simulated fleet, the real router (poller included) behind the
 * chosen front door, and the same seeded open-loop workload every case of this seed gets.
 */
export async function runCase(c: ComparisonCase, o: ComparisonOptions): Promise<CaseResult> {
  const capacity = o.workload?.capacityRps ?? scenarioCapacity(o.scenario, o.seed);
  const rate = capacity * o.load;
  const workload = o.workload
    ? o.workload.create(rate)
    : createWorkload({ seed: o.seed, ratePerSec: rate, durationSec: o.durationSec });
  const pollIntervalSecs = c.pollIntervalSecs ?? 1;
  const frontDoor = c.frontDoor ?? 'proxy';
  const fleet: SimFleet = await startFleet(o.scenario, { speedup: o.speedup });
  const closers: (() => Promise<void>)[] = [() => fleet.close()];
  try {
    const config = validateConfig({
      workers: fleet.urls.map((url) => ({ url })),
      policy: c.policy === 'oracle' ? 'random' : c.policy,
      host: '127.0.0.1',
      poller: { intervalSecs: pollIntervalSecs / o.speedup, timeoutMs: Math.max(50, 1000 / o.speedup) },
    });
    const rng = seededRng(o.seed * 7919 + 17);
    const policy =
      c.policy === 'oracle' ? new OraclePolicy(fleet, { rng, now: Date.now, staleAfterMs: 0 }) : undefined;
    const router = new Router(config, { rng, ...(policy ? { policy } : {}) });
    let polls = 0;
    router.observe({ onPoll: () => (polls += 1) });
    await router.start();
    closers.unshift(() => router.stop());
    if (!(await waitForFirstPolls(router, 10_000))) throw new Error('workers were not polled in time');

    let target: string | TargetPicker;
    if (frontDoor === 'proxy') {
      const proxy = await startProxyServer(router, { port: 0, host: '127.0.0.1' });
      closers.unshift(() => proxy.close());
      target = `http://127.0.0.1:${proxy.port}`;
    } else {
      if (!extProcFactory) throw new Error('no ext_proc front door registered (useExtProcFrontDoor)');
      const door = await extProcFactory(router);
      closers.unshift(() => door.close());
      target = door.picker;
    }
    const agent = new Agent({ keepAlive: true, maxSockets: 4096 });
    closers.push(async () => agent.destroy());
    polls = 0;
    const result = await runLoad({ target, workload, timeScale: o.speedup, agent });
    const stats = fleet.workers.map((w) => w.stats());
    o.onStats?.(stats);
    const share: Record<string, number> = {};
    for (const [k, v] of Object.entries(result.summary.share)) share[fleet.get(k)?.name ?? k] = v;
    return {
      label: c.label,
      scenario: o.scenario,
      seed: o.seed,
      frontDoor,
      pollIntervalSecs,
      rateRps: rate,
      capacityRps: capacity,
      summary: { ...result.summary, share },
      ttftMs: result.records.flatMap((r) => (r.ttftMs === undefined ? [] : [r.ttftMs])),
      preemptions: stats.reduce((a, s) => a + s.preemptions, 0),
      polls,
      lagResyncs: stats.reduce((a, s) => a + s.lagResyncs, 0),
      wallMs: result.wallMs,
    };
  } finally {
    for (const close of closers) await close();
  }
}
