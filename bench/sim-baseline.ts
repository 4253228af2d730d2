// Measured baselines for the simulator: one worker alone, and the `mixed` fleet behind random
// assignment, each driven at a fraction (default 75%) of its estimated capacity by the same seeded
// Poisson workload over real HTTP. Beside each measurement, the same arrivals replayed through the
// pure model on a virtual clock: the two should agree, which checks the real-time loop, the HTTP
// layer and the load generator against the model. `node --import tsx bench/sim-baseline.ts`
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { seededRng } from '../src/core/random.js';
import { estimateFleetCapacity } from '../src/sim/capacity.js';
import { EngineModel } from '../src/sim/engine-model.js';
import { startFleet } from '../src/sim/fleet.js';
import { scenarioWorkers } from '../src/sim/scenarios.js';
import type { SimStats, SimWorkerSpec } from '../src/sim/sim-server.js';
import { runVirtual } from '../src/sim/virtual-run.js';
import { runLoad } from '../src/sim/load-generator.js';
import { type LoadSummary, percentiles } from '../src/sim/load-summary.js';
import { createWorkload, sizeSampler, type WorkloadItem } from '../src/sim/workload.js';

export interface BaselineOptions {
  durationSec?: number;
  load?: number;
  speedup?: number;
  seed?: number;
}

export interface BaselineCase {
  name: string;
  workers: string[];
  capacityRps: number;
  rateRps: number;
  requests: number;
  http: LoadSummary;
  /** The same arrivals and assignment through the pure model on a virtual clock. */
  virtual: { ttftP50: number; ttftP99: number; e2eP50: number; e2eP99: number };
  stats: SimStats[];
  wallMs: number;
}

export interface BaselineResult {
  options: Required<BaselineOptions>;
  cases: BaselineCase[];
}

async function runCase(
  name: string,
  specs: SimWorkerSpec[],
  o: Required<BaselineOptions>,
): Promise<BaselineCase> {
  const capacity = estimateFleetCapacity(specs, () => {
    const s = sizeSampler(o.seed + 1000);
    return () => s();
  }).requestsPerSec;
  const rate = capacity * o.load;
  const workload = createWorkload({ seed: o.seed, ratePerSec: rate, durationSec: o.durationSec });
  const assign = (() => {
    const rng = seededRng(o.seed + 7);
    return () => Math.floor(rng() * specs.length);
  })();
  const assignment = workload.map(() => assign());

  const fleet = await startFleet(specs, { speedup: o.speedup });
  try {
    let n = 0;
    const result = await runLoad({
      workload,
      timeScale: o.speedup,
      target: () => fleet.urls[assignment[n++]!]!,
    });
    return {
      name,
      workers: specs.map((s) => s.name),
      capacityRps: capacity,
      rateRps: rate,
      requests: workload.length,
      http: result.summary,
      virtual: replay(specs, workload, assignment),
      stats: fleet.workers.map((w) => w.stats()),
      wallMs: result.wallMs,
    };
  } finally {
    await fleet.close();
  }
}

function replay(
  specs: SimWorkerSpec[],
  workload: WorkloadItem[],
  assignment: number[],
): BaselineCase['virtual'] {
  const ttft: number[] = [];
  const e2e: number[] = [];
  specs.forEach((spec, i) => {
    const mine = workload.filter((_, k) => assignment[k] === i);
    const { records } = runVirtual(new EngineModel(spec), mine);
    for (const r of records) {
      ttft.push(r.ttftMs!);
      e2e.push(r.e2eMs!);
    }
  });
  const t = percentiles(ttft);
  const e = percentiles(e2e);
  return { ttftP50: t.p50, ttftP99: t.p99, e2eP50: e.p50, e2eP99: e.p99 };
}

export async function run(options: BaselineOptions = {}): Promise<BaselineResult> {
  const o: Required<BaselineOptions> = {
    durationSec: options.durationSec ?? 20,
    load: options.load ?? 0.75,
    speedup: options.speedup ?? 1,
    seed: options.seed ?? 1,
  };
  const mixed = scenarioWorkers('mixed');
  const single = [mixed[0]!];
  return {
    options: o,
    cases: [await runCase(`single ${single[0]!.name}`, single, o), await runCase('mixed, random', mixed, o)],
  };
}

export function print(result: BaselineResult): void {
  const o = result.options;
  console.log(
    `\nsimulator baselines: ${o.durationSec} s Poisson at ${(o.load * 100).toFixed(0)}% of capacity, seed ${o.seed}, speedup ${o.speedup} (model ms)`,
  );
  const f = (x: number) => x.toFixed(0).padStart(7);
  console.log(
    `${'case'.padEnd(16)}${'cap/s'.padStart(7)}${'rate/s'.padStart(7)}${'reqs'.padStart(6)}${'err'.padStart(5)}` +
      `${'ttft50'.padStart(7)}${'ttft90'.padStart(7)}${'ttft99'.padStart(7)}${'e2e50'.padStart(7)}${'e2e99'.padStart(7)}` +
      `  | virtual ttft50/99   preempt  share`,
  );
  for (const c of result.cases) {
    const h = c.http;
    const preempt = c.stats.reduce((a, s) => a + s.preemptions, 0);
    const share = Object.entries(h.share)
      .map(([k, v]) => `${k} ${(v * 100).toFixed(0)}%`)
      .join(' ');
    console.log(
      `${c.name.padEnd(16)}${c.capacityRps.toFixed(1).padStart(7)}${c.rateRps.toFixed(1).padStart(7)}${String(c.requests).padStart(6)}${String(h.errors).padStart(5)}` +
        `${f(h.ttftMs.p50)}${f(h.ttftMs.p90)}${f(h.ttftMs.p99)}${f(h.e2eMs.p50)}${f(h.e2eMs.p99)}` +
        `  | ${f(c.virtual.ttftP50)}${f(c.virtual.ttftP99)}  ${String(preempt).padStart(7)}  ${share}`,
    );
  }
  for (const c of result.cases) {
    const lag = c.stats.reduce((a, s) => a + s.lagResyncs, 0);
    console.log(
      `  ${c.name}: wall ${(c.wallMs / 1000).toFixed(1)} s, generator max send lag ${c.http.maxSendLagMs.toFixed(0)} ms, engine lag resyncs ${lag}`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? Number(process.argv[i + 1]) : undefined;
  };
  const result = await run({
    durationSec: arg('duration'),
    speedup: arg('speedup'),
    load: arg('load'),
    seed: arg('seed'),
  });
  print(result);
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/sim-baseline.json', `${JSON.stringify(result, null, 2)}\n`);
  console.log('wrote bench/results/sim-baseline.json');
}
