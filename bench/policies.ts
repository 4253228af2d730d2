// `npm run bench:policies`: what each policy does to TTFT on simulated fleets, through the real
// router (poller included) and a real front door. Flags: --quick (one seed, one scenario, short),
// --seeds 1,2,3  --scenarios mixed,one-slow  --duration 60 (model s)  --speedup 4  --load 0.75
// --no-sweep  --no-ext-proc  --only 'expected_wait,GIE' (main-table rows whose label contains one)
// --out name (default policies): writes bench/results/<name>.json and the TTFT charts.
import { mkdir, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { percentiles } from '../src/sim/load-summary.js';
import { type CaseResult, type ComparisonCase, runCase } from '../src/sim/policy-comparison.js';
import type { ScenarioName } from '../src/sim/scenarios.js';
import { barChart } from '../src/sim/svg-chart.js';
import { registerExtProcFrontDoor } from './ext-proc-front-door.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seeds: { type: 'string' },
    scenarios: { type: 'string' },
    duration: { type: 'string' },
    speedup: { type: 'string', default: '4' },
    load: { type: 'string', default: '0.75' },
    'no-sweep': { type: 'boolean', default: false },
    'no-ext-proc': { type: 'boolean', default: false },
    /** Only the main-table rows whose label contains one of these (comma-separated). */
    only: { type: 'string' },
    out: { type: 'string', default: 'policies' },
  },
});

const quick = args.quick;
const seeds = (args.seeds ?? (quick ? '1' : '1,2,3')).split(',').map(Number);
const scenarios = (args.scenarios ?? (quick ? 'mixed' : 'mixed,one-slow')).split(',') as ScenarioName[];
const durationSec = Number(args.duration ?? (quick ? 30 : 60));
const speedup = Number(args.speedup);
const load = Number(args.load);

/** The policies side by side. The Inference Extension anchor polls every 50 ms, as it does upstream. */
const MAIN: ComparisonCase[] = [
  { label: 'random', policy: 'random' },
  { label: 'round_robin', policy: 'round_robin' },
  { label: 'power_of_two', policy: 'power_of_two' },
  { label: 'least_load seed λ=0.5', policy: { name: 'least_load', mode: 'seed', lambda: 0.5 } },
  { label: 'least_load seed λ=1.5', policy: { name: 'least_load', mode: 'seed', lambda: 1.5 } },
  { label: 'least_load seed λ=4', policy: { name: 'least_load', mode: 'seed', lambda: 4 } },
  { label: 'least_load seed 50ms', policy: { name: 'least_load', mode: 'seed' }, pollIntervalSecs: 0.05 },
  { label: 'least_load expected_wait', policy: { name: 'least_load', mode: 'expected_wait' } },
  {
    label: 'least_load expected_wait 50ms',
    policy: { name: 'least_load', mode: 'expected_wait' },
    pollIntervalSecs: 0.05,
  },
  { label: 'GIE queue+kv 50ms', policy: { name: 'weighted', preset: 'gie_load' }, pollIntervalSecs: 0.05 },
  { label: 'GIE queue+kv 1s', policy: { name: 'weighted', preset: 'gie_load' } },
  {
    label: 'weighted queue+kv+in_flight 1s',
    policy: {
      name: 'weighted',
      scorers: [
        { name: 'queue', weight: 2 },
        { name: 'kv', weight: 2 },
        { name: 'in_flight', weight: 1 },
      ],
    },
  },
  { label: 'oracle', policy: 'oracle' },
];

const only = args.only?.split(',');
const cases = only ? MAIN.filter((c) => only.some((o) => c.label.includes(o))) : MAIN;

const SWEEP = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10];

function pooled(results: CaseResult[]) {
  const ttft = results.flatMap((r) => r.ttftMs);
  const p = percentiles(ttft);
  const errors = results.reduce((a, r) => a + r.summary.errors, 0);
  const e2e50 = percentiles(results.map((r) => r.summary.e2eMs.p50)).p50;
  const e2e99 = percentiles(results.map((r) => r.summary.e2eMs.p99)).p50;
  const preemptions = results.reduce((a, r) => a + r.preemptions, 0);
  const lag = results.reduce((a, r) => a + r.lagResyncs, 0);
  return {
    p50: p.p50,
    p90: p.p90,
    p99: p.p99,
    errors,
    e2e50,
    e2e99,
    preemptions,
    lag,
    requests: ttft.length,
  };
}

const f = (x: number, w = 8) => (Number.isFinite(x) ? x.toFixed(0) : '-').padStart(w);

function printTable(title: string, rows: { label: string; results: CaseResult[] }[]): void {
  console.log(`\n${title}`);
  console.log(
    `${'policy'.padEnd(32)}${'reqs'.padStart(7)}${'err'.padStart(5)}${'ttft50'.padStart(8)}${'ttft90'.padStart(8)}${'ttft99'.padStart(8)}` +
      `${'e2e50'.padStart(8)}${'e2e99'.padStart(8)}${'preempt'.padStart(8)}  share per worker`,
  );
  for (const row of rows) {
    const p = pooled(row.results);
    const share = row.results[0]?.summary.share ?? {};
    const shares = Object.entries(share)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k} ${(v * 100).toFixed(0)}%`)
      .join(' ');
    console.log(
      `${row.label.padEnd(32)}${f(p.requests, 7)}${f(p.errors, 5)}${f(p.p50)}${f(p.p90)}${f(p.p99)}${f(p.e2e50)}${f(p.e2e99)}${f(p.preemptions)}  ${shares}${p.lag > 0 ? `  (sim lag resyncs ${p.lag})` : ''}`,
    );
  }
}

const all: CaseResult[] = [];
const started = Date.now();
const total =
  scenarios.length * seeds.length * cases.length +
  (args['no-sweep'] ? 0 : SWEEP.length) +
  (args['no-ext-proc'] ? 0 : 2);
let done = 0;
async function run(c: ComparisonCase, scenario: ScenarioName, seed: number): Promise<CaseResult> {
  const r = await runCase(c, { scenario, seed, durationSec, load, speedup });
  done += 1;
  process.stderr.write(
    `[${done}/${total}] ${scenario} seed ${seed} ${c.label} (${c.frontDoor ?? 'proxy'}): ttft p99 ${r.summary.ttftMs.p99.toFixed(0)} ms, ${r.summary.errors} errors, ${(r.wallMs / 1000).toFixed(1)} s\n`,
  );
  all.push(r);
  return r;
}

console.log(
  `policy benchmark: ${scenarios.join(', ')}; seeds ${seeds.join(', ')}; ${durationSec} model s at ${(load * 100).toFixed(0)}% of capacity; speedup ${speedup}; TTFT in model ms, percentiles pooled over seeds`,
);
const byScenario: Record<string, { label: string; results: CaseResult[] }[]> = {};
for (const scenario of scenarios) {
  const rows = cases.map((c) => ({ label: c.label, results: [] as CaseResult[] }));
  for (const seed of seeds) {
    for (const [i, c] of cases.entries()) rows[i]!.results.push(await run(c, scenario, seed));
  }
  byScenario[scenario] = rows;
  printTable(`${scenario} fleet, via the Express proxy, poll 1 s unless noted`, rows);
}

let sweep: { label: string; results: CaseResult[] }[] = [];
if (!args['no-sweep']) {
  const scenario = scenarios[0]!;
  const seed = seeds[0]!;
  sweep = [];
  for (const interval of SWEEP) {
    const c: ComparisonCase = {
      label: `least_load seed poll ${interval}s`,
      policy: 'least_load',
      pollIntervalSecs: interval,
    };
    sweep.push({ label: c.label, results: [await run(c, scenario, seed)] });
  }
  printTable(`poll-interval sweep, least_load seed λ=1.5, ${scenario}, seed ${seed}`, sweep);
}

const extProc: { label: string; results: CaseResult[] }[] = [];
if (!args['no-ext-proc']) {
  registerExtProcFrontDoor();
  const scenario = scenarios[0]!;
  const seed = seeds[0]!;
  for (const c of [
    { label: 'round_robin via ext_proc', policy: 'round_robin', frontDoor: 'ext_proc' },
    { label: 'least_load via ext_proc', policy: 'least_load', frontDoor: 'ext_proc' },
  ] as ComparisonCase[]) {
    extProc.push({ label: c.label, results: [await run(c, scenario, seed)] });
  }
  printTable(
    `ext_proc front door (a client plays Envoy, then calls the chosen worker), ${scenario}, seed ${seed}`,
    extProc,
  );
}

// Targets from the issue, on the first scenario (the default heterogeneous fleet).
const rows = byScenario[scenarios[0]!]!;
const p99 = (label: string) => {
  const row = rows.find((r) => r.label === label);
  return row ? pooled(row.results).p99 : NaN;
};
const ll = p99('least_load seed λ=1.5');
const verdicts = [
  ['least_load p99 <= 0.5x round_robin', ll / p99('round_robin'), 0.5],
  ['least_load p99 <= 0.75x power_of_two', ll / p99('power_of_two'), 0.75],
  ['least_load p99 <= 1.5x oracle', ll / p99('oracle'), 1.5],
] as const;
console.log(`\ntargets (${scenarios[0]}):`);
for (const [what, ratio, limit] of verdicts) {
  console.log(`  ${what}: ratio ${ratio.toFixed(2)} ${ratio <= limit ? 'met' : 'MISSED'}`);
}
const llRow = rows.find((r) => r.label === 'least_load seed λ=1.5');
if (llRow) {
  const errors = pooled(llRow.results).errors;
  console.log(`  least_load errors: ${errors} ${errors === 0 ? 'met' : 'MISSED'}`);
}

await mkdir('bench/results', { recursive: true });
const slim = all.map(({ ttftMs: _t, ...rest }) => rest);
await writeFile(
  `bench/results/${args.out}.json`,
  `${JSON.stringify({ args: { seeds, scenarios, durationSec, speedup, load }, cases: slim }, null, 2)}\n`,
);
for (const [scenario, srows] of Object.entries(byScenario)) {
  const groups = srows.map((r) => {
    const p = pooled(r.results);
    return { label: r.label, values: [p.p50, p.p90, p.p99] };
  });
  await writeFile(
    `bench/results/ttft-${scenario}${args.out === 'policies' ? '' : `-${args.out}`}.svg`,
    barChart(groups, {
      title: `TTFT by policy, ${scenario} fleet, ${(load * 100).toFixed(0)}% load, seeds ${seeds.join(',')}`,
      series: ['p50', 'p90', 'p99'],
      unit: 'TTFT, ms (log scale)',
      log: true,
    }),
  );
}
console.log(
  `\nwrote bench/results/${args.out}.json and ttft-*.svg in ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
