// Multi-turn chat through the real router and Express proxy onto simulated fleets whose engines
// cache prompt prefixes: what each policy does to TTFT when a request's prompt is mostly the
// previous turn's. Every policy gets the same seeded conversations on a fresh fleet.
// `node --import tsx bench/prefix-workload.ts [--quick] [--scenarios uniform,mixed]
//   [--loads uniform=1.4,mixed=1] [--duration 60] [--speedup 4] [--seed 1] [--policies a,b]`
// Writes bench/results/prefix-workload.json and bench/results/ttft-multiturn.svg.
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { conversationCapacity, createConversations, meanTurns } from '../src/sim/conversation-workload.js';
import type { Percentiles } from '../src/sim/load-summary.js';
import { type ComparisonCase, type ComparisonWorkload, runCase } from '../src/sim/policy-comparison.js';
import { scenarioWorkers, type ScenarioName } from '../src/sim/scenarios.js';
import type { SimStats } from '../src/sim/sim-server.js';
import { barChart } from '../src/sim/svg-chart.js';

export const CASES: readonly ComparisonCase[] = [
  { label: 'round_robin', policy: 'round_robin' },
  { label: 'least_load seed', policy: { name: 'least_load', mode: 'seed' } },
  { label: 'least_load expected_wait', policy: { name: 'least_load', mode: 'expected_wait' } },
  { label: 'consistent_hashing', policy: 'consistent_hashing' },
  { label: 'manual (sticky)', policy: 'manual' },
  { label: 'prefix_hash', policy: 'prefix_hash' },
  { label: 'cache_aware', policy: 'cache_aware' },
  { label: 'weighted gie (+prefix)', policy: { name: 'weighted', preset: 'gie' } },
  { label: 'weighted gie_load', policy: { name: 'weighted', preset: 'gie_load' } },
];

/**
 * Offered load as a fraction of the fleet's capacity for this mix WITHOUT a prefix cache. Caching
 * lifts real capacity (system prompts alone are about a third of the prompt tokens), so loads above
 * 1 are where routing for the cache pays: the uniform fleet at 1.4, the mixed one at 1.0, where its
 * L40S is already the bottleneck for any policy that spreads sessions evenly.
 */
export const DEFAULT_LOADS: Readonly<Record<string, number>> = { uniform: 1.4, mixed: 1.0 };

export interface PrefixWorkloadOptions {
  quick?: boolean;
  scenarios?: ScenarioName[];
  loads?: Record<string, number>;
  /** Model seconds during which sessions start; their later turns run past it. */
  durationSec?: number;
  speedup?: number;
  seed?: number;
  /** Only the cases whose label is listed. */
  policies?: string[];
  /** Progress lines (default: to stderr). */
  log?(line: string): void;
}

export interface PrefixCaseResult {
  label: string;
  scenario: ScenarioName;
  load: number;
  capacityRps: number;
  rateRps: number;
  requests: number;
  errors: number;
  errorKinds: Record<string, number>;
  ttftMs: Percentiles;
  e2eMs: Percentiles;
  /** Prompt tokens served from the engines' prefix caches / prompt tokens looked up (sim stats). */
  cacheHitRatio: number;
  preemptions: number;
  share: Record<string, number>;
  polls: number;
  /** Nonzero: the machine, not the policy, shaped the tail. */
  lagResyncs: number;
  maxLagMs: number;
  maxSendLagMs: number;
  wallMs: number;
}

export interface PrefixWorkloadResult {
  options: {
    scenarios: ScenarioName[];
    loads: Record<string, number>;
    durationSec: number;
    speedup: number;
    seed: number;
  };
  cases: PrefixCaseResult[];
}

function conversations(scenario: ScenarioName, seed: number, durationSec: number): ComparisonWorkload {
  return {
    capacityRps: conversationCapacity(scenarioWorkers(scenario), { seed }),
    create: (rateRps) => createConversations({ seed, sessionsPerSec: rateRps / meanTurns(), durationSec }),
  };
}

export async function run(options: PrefixWorkloadOptions = {}): Promise<PrefixWorkloadResult> {
  const quick = options.quick ?? false;
  const scenarios = options.scenarios ?? (['uniform', 'mixed'] as ScenarioName[]);
  const loads = { ...DEFAULT_LOADS, ...options.loads };
  const durationSec = options.durationSec ?? (quick ? 15 : 60);
  const speedup = options.speedup ?? 4;
  const seed = options.seed ?? 1;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const cases = CASES.filter((c) => !options.policies || options.policies.includes(c.label));
  const results: PrefixCaseResult[] = [];
  for (const scenario of scenarios) {
    const load = loads[scenario] ?? 1;
    const workload = conversations(scenario, seed, durationSec);
    for (const c of cases) {
      let stats: readonly SimStats[] = [];
      const r = await runCase(c, {
        scenario,
        seed,
        durationSec,
        load,
        speedup,
        workload,
        onStats: (s) => (stats = s),
      });
      const queries = stats.reduce((a, s) => a + s.prefixQueryTokens, 0);
      const hits = stats.reduce((a, s) => a + s.prefixHitTokens, 0);
      const result: PrefixCaseResult = {
        label: c.label,
        scenario,
        load,
        capacityRps: r.capacityRps,
        rateRps: r.rateRps,
        requests: r.summary.requests,
        errors: r.summary.errors,
        errorKinds: r.summary.errorKinds,
        ttftMs: r.summary.ttftMs,
        e2eMs: r.summary.e2eMs,
        cacheHitRatio: queries > 0 ? hits / queries : 0,
        preemptions: r.preemptions,
        share: r.summary.share,
        polls: r.polls,
        lagResyncs: r.lagResyncs,
        maxLagMs: Math.max(0, ...stats.map((s) => s.maxLagMs)),
        maxSendLagMs: r.summary.maxSendLagMs,
        wallMs: r.wallMs,
      };
      results.push(result);
      log(
        `[${results.length}/${scenarios.length * cases.length}] ${scenario} ${c.label}: ttft p50 ${result.ttftMs.p50.toFixed(0)} ` +
          `p99 ${result.ttftMs.p99.toFixed(0)} ms, hits ${(100 * result.cacheHitRatio).toFixed(1)}%, ` +
          `${result.errors} errors, lag resyncs ${result.lagResyncs}, ${(result.wallMs / 1000).toFixed(1)} s`,
      );
    }
  }
  return { options: { scenarios, loads, durationSec, speedup, seed }, cases: results };
}

const f = (x: number, w = 8) => (Number.isFinite(x) ? x.toFixed(0) : '-').padStart(w);

export function print(r: PrefixWorkloadResult): void {
  const o = r.options;
  console.log(
    `\nmulti-turn chat (2-8 turns, 4 shared system prompts, open-loop think time), sessions starting over ` +
      `${o.durationSec} model s, seed ${o.seed}, speedup ${o.speedup}; TTFT/e2e in model ms; ` +
      `hit = prompt tokens served from the engines' prefix caches`,
  );
  for (const scenario of o.scenarios) {
    const rows = r.cases.filter((c) => c.scenario === scenario);
    if (rows.length === 0) continue;
    const first = rows[0]!;
    console.log(
      `\n${scenario} fleet at ${(100 * first.load).toFixed(0)}% of its no-cache capacity ` +
        `(${first.rateRps.toFixed(2)} of ${first.capacityRps.toFixed(2)} req/s), via the Express proxy, poll 1 s`,
    );
    console.log(
      `${'policy'.padEnd(26)}${'reqs'.padStart(6)}${'err'.padStart(5)}${'ttft50'.padStart(8)}${'ttft90'.padStart(8)}` +
        `${'ttft99'.padStart(8)}${'e2e50'.padStart(8)}${'e2e99'.padStart(8)}${'hit%'.padStart(7)}${'preempt'.padStart(8)}` +
        `${'lag'.padStart(5)}  share per worker`,
    );
    for (const c of rows) {
      const share = Object.entries(c.share)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k} ${(v * 100).toFixed(0)}%`)
        .join(' ');
      console.log(
        `${c.label.padEnd(26)}${f(c.requests, 6)}${f(c.errors, 5)}${f(c.ttftMs.p50)}${f(c.ttftMs.p90)}${f(c.ttftMs.p99)}` +
          `${f(c.e2eMs.p50)}${f(c.e2eMs.p99)}${(100 * c.cacheHitRatio).toFixed(1).padStart(7)}${f(c.preemptions)}` +
          `${f(c.lagResyncs, 5)}  ${share}`,
      );
    }
    const ll = rows.find((c) => c.label === 'least_load seed');
    const ca = rows.find((c) => c.label === 'cache_aware');
    if (ll && ca) {
      console.log(
        `  cache_aware / least_load seed: TTFT p50 ${(ca.ttftMs.p50 / ll.ttftMs.p50).toFixed(2)}x, ` +
          `p99 ${(ca.ttftMs.p99 / ll.ttftMs.p99).toFixed(2)}x, e2e p99 ${(ca.e2eMs.p99 / ll.e2eMs.p99).toFixed(2)}x`,
      );
    }
  }
}

/** Writes the JSON result and the TTFT chart (p50 and p99 per scenario, log scale). */
export async function writeResults(r: PrefixWorkloadResult, dir = 'bench/results'): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const json = `${dir}/prefix-workload.json`;
  const svg = `${dir}/ttft-multiturn.svg`;
  await writeFile(json, `${JSON.stringify(r, null, 2)}\n`);
  const labels = [...new Set(r.cases.map((c) => c.label))];
  const series = r.options.scenarios.flatMap((s) => [`${s} p50`, `${s} p99`]);
  const groups = labels.map((label) => ({
    label,
    values: r.options.scenarios.flatMap((s) => {
      const c = r.cases.find((x) => x.label === label && x.scenario === s);
      return [c?.ttftMs.p50 ?? NaN, c?.ttftMs.p99 ?? NaN];
    }),
  }));
  const loads = r.options.scenarios
    .map((s) => `${s} ${(100 * (r.options.loads[s] ?? 1)).toFixed(0)}%`)
    .join(', ');
  await writeFile(
    svg,
    barChart(groups, {
      title: `TTFT by policy, multi-turn chat with engine prefix caches (${loads} of no-cache capacity)`,
      series,
      unit: 'TTFT, ms (log scale)',
      log: true,
    }),
  );
  return [json, svg];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values: args } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      scenarios: { type: 'string' },
      loads: { type: 'string' },
      duration: { type: 'string' },
      speedup: { type: 'string' },
      seed: { type: 'string' },
      policies: { type: 'string' },
    },
  });
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const loads: Record<string, number> = {};
  for (const pair of args.loads?.split(',') ?? []) {
    const [k, v] = pair.split('=');
    if (k && v) loads[k] = Number(v);
  }
  const started = Date.now();
  const result = await run({
    quick: args.quick,
    ...(args.scenarios ? { scenarios: args.scenarios.split(',') as ScenarioName[] } : {}),
    loads,
    durationSec: num(args.duration),
    speedup: num(args.speedup),
    seed: num(args.seed),
    ...(args.policies ? { policies: args.policies.split(',') } : {}),
  });
  print(result);
  const files = await writeResults(result);
  console.log(`\nwrote ${files.join(' and ')} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}
