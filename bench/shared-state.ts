// Shared in-flight state through Redis (issue 10): what it adds to a pick, and what it buys when
// a fleet of router replicas splits the traffic. Starts its own redis-server on a loopback port.
// Runnable alone: node --import tsx bench/shared-state.ts [--quick] [--seeds 1,2] [--duration 40]
// [--load 0.85] (model seconds per case; TTFTs are pooled over the seeds).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { Agent } from 'node:http';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { validateConfig } from '../src/config/validate.js';
import type { Lease } from '../src/core/lease.js';
import { seededRng } from '../src/core/random.js';
import { startProxyServer } from '../src/express/standalone-proxy.js';
import { Router } from '../src/router.js';
import { startFleet } from '../src/sim/fleet.js';
import { runLoad } from '../src/sim/load-generator.js';
import { percentiles } from '../src/sim/load-summary.js';
import { scenarioCapacity } from '../src/sim/policy-comparison.js';
import type { ScenarioName } from '../src/sim/scenarios.js';
import { createWorkload } from '../src/sim/workload.js';
import { startRedis, type RedisProcess } from '../test/state/redis-server.js';

const FLEET_CHILD_FLAG = '--fleet-child';
const SIZES = [4, 64];
const PICKS = 200_000;
const ROUNDS = 7;
/** Picks each spread over their own event-loop turn, as a server makes them. */
const TURN_PICKS = 20_000;
/** Leases open at once in the per-turn run. */
const HELD = 32;

export interface PickCost {
  workers: number;
  /** pick+release in a tight loop, ns (median of the rounds). */
  localNs: number;
  sharedNs: number;
  /** One pick+release per event-loop turn, ns per turn, Redis writes included (they share the CPU). */
  localTurnNs: number;
  sharedTurnNs: number;
  /** Redis writes the shared replica made per per-turn run (of TURN_PICKS picks). */
  sharedWrites: number;
}

export interface ReplicaCase {
  replicas: number;
  shared: boolean;
  requests: number;
  errors: number;
  ttftP50: number;
  ttftP90: number;
  ttftP99: number;
  e2eP99: number;
  wallMs: number;
  /** Requests queued in the engines (not yet running), fleet-wide, averaged over the run. */
  meanWaiting: number;
  /** Times a simulated engine fell behind wall time: nonzero means the machine shaped the tail. */
  lagResyncs: number;
}

export interface SharedStateResult {
  pickCost: PickCost[];
  /** CPU of a started, idle shared replica (background refresh every refreshMs), % of one core. */
  idleCpuPercent: number;
  scenario: ScenarioName;
  load: number;
  speedup: number;
  durationSec: number;
  seeds: number[];
  cases: ReplicaCase[];
}

export interface RunOptions {
  quick?: boolean;
  seeds?: number[];
  durationSec?: number;
  load?: number;
}

interface CaseRun {
  ttft: number[];
  e2e: number[];
  requests: number;
  errors: number;
  wallMs: number;
  lagResyncs: number;
  meanWaiting: number;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const urls = (n: number) =>
  Array.from({ length: n }, (_, i) => `http://10.0.${i >> 8}.${(i & 255) + 1}:8000`);
const turn = () => new Promise<void>((r) => setImmediate(r));

function tightLoop(router: Router): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < PICKS; i++) router.pick().release();
  return Number(process.hrtime.bigint() - t0) / PICKS;
}

/** Leases live a few turns, as requests do: every turn releases the oldest and picks a new one. */
async function perTurn(router: Router): Promise<number> {
  const open: Lease[] = [];
  for (let i = 0; i < HELD; i++) open.push(router.pick());
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < TURN_PICKS; i++) {
    open[i % HELD]!.release();
    open[i % HELD] = router.pick();
    await turn();
  }
  await router.sharedState?.flush();
  const ns = Number(process.hrtime.bigint() - t0) / TURN_PICKS;
  for (const lease of open) lease.release();
  return ns;
}

async function pickCost(redis: RedisProcess, workers: number): Promise<PickCost> {
  const make = (shared: boolean) =>
    new Router(
      validateConfig({
        workers: urls(workers),
        policy: 'least_load',
        ...(shared ? { state: { redis: { url: redis.url, keyPrefix: `bench-pick-${workers}:` } } } : {}),
      }),
      { rng: seededRng(1) },
    );
  const local = make(false);
  const shared = make(true);
  // Only the shared state starts: the workers are not real, and the poller is not what is measured.
  await shared.sharedState!.start();
  try {
    const l: number[] = [];
    const s: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      l.push(tightLoop(local));
      s.push(tightLoop(shared));
    }
    const lt: number[] = [];
    const st: number[] = [];
    const writesBefore = shared.sharedState!.writes;
    for (let r = 0; r < 3; r++) {
      lt.push(await perTurn(local));
      st.push(await perTurn(shared));
    }
    return {
      workers,
      localNs: median(l),
      sharedNs: median(s),
      localTurnNs: median(lt),
      sharedTurnNs: median(st),
      sharedWrites: Math.round((shared.sharedState!.writes - writesBefore) / 3),
    };
  } finally {
    await shared.sharedState!.stop();
  }
}

async function idleCpu(redis: RedisProcess): Promise<number> {
  const router = new Router(
    validateConfig({ workers: urls(16), state: { redis: { url: redis.url, keyPrefix: 'bench-idle:' } } }),
  );
  await router.sharedState!.start();
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, 2000));
  const c = process.cpuUsage(c0);
  const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
  await router.sharedState!.stop();
  return ((c.user + c.system) / wallUs) * 100;
}

interface FleetStats {
  waiting: number;
  lagResyncs: number;
}

interface RemoteFleet {
  urls: string[];
  stats(): Promise<FleetStats>;
  close(): Promise<void>;
}

type FleetMessage = { type: 'ready'; urls: string[] } | ({ type: 'stats'; id: number } & FleetStats);

/**
 * The simulated fleet in a child process: its engines step on wall-clock timers, and sharing an
 * event loop with N routers (and their Redis traffic) would slow them down and bias the comparison.
 */
async function startRemoteFleet(scenario: ScenarioName, speedup: number): Promise<RemoteFleet> {
  const child = fork(fileURLToPath(import.meta.url), [FLEET_CHILD_FLAG, scenario, String(speedup)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, (s: FleetStats) => void>();
  let nextId = 0;
  const urls = await new Promise<string[]>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`fleet process exited with ${code}`)));
    child.on('message', (m: FleetMessage) => {
      if (m.type === 'ready') resolve(m.urls);
      else pending.get(m.id)?.(m);
      if (m.type === 'stats') pending.delete(m.id);
    });
  });
  child.removeAllListeners('exit');
  return {
    urls,
    stats: () =>
      new Promise<FleetStats>((resolve) => {
        const id = nextId++;
        pending.set(id, resolve);
        child.send({ type: 'stats', id });
      }),
    close: async () => {
      const exited = once(child, 'exit');
      child.send({ type: 'close' });
      await exited;
    },
  };
}

async function fleetChild(scenario: ScenarioName, speedup: number): Promise<void> {
  const fleet = await startFleet(scenario, { speedup });
  process.on('message', (m: { type: 'stats'; id: number } | { type: 'close' }) => {
    if (m.type === 'close') {
      void fleet.close().then(() => process.exit(0));
      return;
    }
    let waiting = 0;
    let lagResyncs = 0;
    for (const w of fleet.workers) {
      const st = w.stats();
      waiting += st.waiting;
      lagResyncs += st.lagResyncs;
    }
    process.send?.({ type: 'stats', id: m.id, waiting, lagResyncs });
  });
  process.send?.({ type: 'ready', urls: fleet.urls });
}

interface CaseOptions {
  scenario: ScenarioName;
  seed: number;
  load: number;
  speedup: number;
  durationSec: number;
}

/**
 * N router replicas (each with its own poller and proxy) over one simulated fleet (in its own
 * process); the load generator sends request i to replica i mod N, like a round-robin L4 balancer
 * in front of them.
 */
async function replicaCase(
  redis: RedisProcess,
  replicas: number,
  shared: boolean,
  o: CaseOptions,
): Promise<CaseRun> {
  const rate = scenarioCapacity(o.scenario, o.seed) * o.load;
  const workload = createWorkload({ seed: o.seed, ratePerSec: rate, durationSec: o.durationSec });
  const fleet = await startRemoteFleet(o.scenario, o.speedup);
  const closers: (() => Promise<void>)[] = [() => fleet.close()];
  try {
    const keyPrefix = `bench-${replicas}-${Date.now()}:`;
    const targets: string[] = [];
    for (let i = 0; i < replicas; i++) {
      const config = validateConfig({
        workers: fleet.urls.map((url) => ({ url })),
        policy: 'least_load',
        host: '127.0.0.1',
        poller: { intervalSecs: 1 / o.speedup, timeoutMs: Math.max(50, 1000 / o.speedup) },
        ...(shared ? { state: { redis: { url: redis.url, keyPrefix } } } : {}),
      });
      const router = new Router(config, { rng: seededRng(o.seed * 7919 + 17 + i) });
      await router.start();
      closers.unshift(() => router.stop());
      const proxy = await startProxyServer(router, { port: 0, host: '127.0.0.1' });
      closers.unshift(() => proxy.close());
      targets.push(`http://127.0.0.1:${proxy.port}`);
    }
    // Let every replica's first polls land so no case starts blind.
    await new Promise((r) => setTimeout(r, 1500 / o.speedup));
    const agent = new Agent({ keepAlive: true, maxSockets: 4096 });
    closers.push(async () => agent.destroy());
    let next = 0;
    let samples = 0;
    let waiting = 0;
    const sampler = setInterval(() => {
      void fleet.stats().then((st) => {
        samples += 1;
        waiting += st.waiting;
      });
    }, 25);
    closers.unshift(async () => clearInterval(sampler));
    const result = await runLoad({
      target: () => targets[next++ % targets.length]!,
      workload,
      timeScale: o.speedup,
      agent,
    });
    const { lagResyncs } = await fleet.stats();
    return {
      ttft: result.records.flatMap((r) => (r.ttftMs === undefined ? [] : [r.ttftMs])),
      e2e: result.records.flatMap((r) => (r.e2eMs === undefined ? [] : [r.e2eMs])),
      requests: result.summary.requests,
      errors: result.summary.errors,
      wallMs: result.wallMs,
      lagResyncs,
      meanWaiting: waiting / Math.max(1, samples),
    };
  } finally {
    for (const close of closers) await close();
  }
}

export async function run(options: RunOptions = {}): Promise<SharedStateResult> {
  const redis = await startRedis();
  try {
    const pick: PickCost[] = [];
    for (const n of SIZES) pick.push(await pickCost(redis, n));
    const idleCpuPercent = await idleCpu(redis);
    const seeds = options.seeds ?? [1];
    const common = {
      scenario: 'mixed' as const,
      load: options.load ?? 0.85,
      speedup: 4,
      durationSec: options.durationSec ?? (options.quick ? 20 : 40),
    };
    const cases: ReplicaCase[] = [];
    for (const [replicas, shared] of [
      [1, false],
      [1, true],
      [2, false],
      [2, true],
      [4, false],
      [4, true],
    ] as const) {
      const runs: CaseRun[] = [];
      for (const seed of seeds) runs.push(await replicaCase(redis, replicas, shared, { ...common, seed }));
      const ttft = percentiles(runs.flatMap((r) => r.ttft));
      cases.push({
        replicas,
        shared,
        requests: runs.reduce((a, r) => a + r.requests, 0),
        errors: runs.reduce((a, r) => a + r.errors, 0),
        ttftP50: ttft.p50,
        ttftP90: ttft.p90,
        ttftP99: ttft.p99,
        e2eP99: percentiles(runs.flatMap((r) => r.e2e)).p99,
        wallMs: runs.reduce((a, r) => a + r.wallMs, 0),
        lagResyncs: runs.reduce((a, r) => a + r.lagResyncs, 0),
        meanWaiting: runs.reduce((a, r) => a + r.meanWaiting, 0) / runs.length,
      });
    }
    return { pickCost: pick, idleCpuPercent, ...common, seeds, cases };
  } finally {
    await redis.stop();
  }
}

export function print(r: SharedStateResult): void {
  console.log('\nshared in-flight state (Redis): pick cost, local vs shared, side by side in one process');
  console.log(
    `${'workers'.padEnd(8)}${'local ns'.padStart(10)}${'shared ns'.padStart(11)}${'added'.padStart(8)}` +
      `${'local/turn'.padStart(12)}${'shared/turn'.padStart(13)}${'writes/run'.padStart(12)}`,
  );
  for (const p of r.pickCost) {
    console.log(
      `${String(p.workers).padEnd(8)}${p.localNs.toFixed(0).padStart(10)}${p.sharedNs.toFixed(0).padStart(11)}` +
        `${(p.sharedNs - p.localNs).toFixed(0).padStart(8)}${p.localTurnNs.toFixed(0).padStart(12)}` +
        `${p.sharedTurnNs.toFixed(0).padStart(13)}${String(p.sharedWrites).padStart(12)}`,
    );
  }
  console.log(
    `  tight loop: ${PICKS} pick+release, median of ${ROUNDS}; per turn: ${TURN_PICKS} picks, one per event-loop turn`,
  );
  console.log(`  idle shared replica (refresh every 5 ms): ${r.idleCpuPercent.toFixed(1)}% of one core`);
  console.log(
    `\nleast_load TTFT with N replicas behind a round-robin balancer: ${r.scenario} fleet, load ${r.load}, ` +
      `${r.durationSec} model s, speedup ${r.speedup}, seeds ${r.seeds.join(',')} pooled (model ms)`,
  );
  const base = r.cases.find((c) => c.replicas === 1 && !c.shared)?.ttftP99 ?? NaN;
  console.log(
    `${'replicas'.padEnd(10)}${'state'.padEnd(8)}${'ok'.padStart(6)}${'err'.padStart(5)}${'TTFT p50'.padStart(10)}` +
      `${'TTFT p90'.padStart(10)}${'TTFT p99'.padStart(10)}${'vs 1'.padStart(7)}${'e2e p99'.padStart(10)}` +
      `${'queued'.padStart(8)}${'lag'.padStart(5)}`,
  );
  for (const c of r.cases) {
    console.log(
      `${String(c.replicas).padEnd(10)}${(c.shared ? 'redis' : 'local').padEnd(8)}` +
        `${String(c.requests - c.errors).padStart(6)}${String(c.errors).padStart(5)}` +
        `${c.ttftP50.toFixed(0).padStart(10)}${c.ttftP90.toFixed(0).padStart(10)}` +
        `${c.ttftP99.toFixed(0).padStart(10)}${(c.ttftP99 / base).toFixed(2).padStart(7)}` +
        `${c.e2eP99.toFixed(0).padStart(10)}${c.meanWaiting.toFixed(2).padStart(8)}` +
        `${String(c.lagResyncs).padStart(5)}`,
    );
  }
  console.log(
    '  queued: requests waiting in the engines, fleet-wide, time-averaged (less noisy than a p99);' +
      ' lag: simulator resyncs (the machine, not the policy, shaped the tail when high)',
  );
}

if (process.argv[2] === FLEET_CHILD_FLAG) {
  await fleetChild(process.argv[3] as ScenarioName, Number(process.argv[4]));
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      seeds: { type: 'string' },
      duration: { type: 'string' },
      load: { type: 'string' },
    },
  });
  print(
    await run({
      quick: values.quick,
      ...(values.seeds ? { seeds: values.seeds.split(',').map(Number) } : {}),
      ...(values.duration ? { durationSec: Number(values.duration) } : {}),
      ...(values.load ? { load: Number(values.load) } : {}),
    }),
  );
}
