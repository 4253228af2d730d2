// Prometheus text parsing cost on a ~200 KB vLLM /metrics page (8 DP engines, full histograms):
// the whole page, the few gauges the vLLM adapter keeps, and the adapter end to end, with
// JSON.parse of the same samples as a yardstick measured in the same rounds.
import { pathToFileURL } from 'node:url';
import { VllmSource } from '../src/poller/engines/vllm.js';
import { parsePrometheusText } from '../src/poller/prometheus-text.js';
import { makeVllmMetrics } from '../test/fixtures/make-vllm-metrics.js';

export interface ParseCost {
  pageBytes: number;
  jsonBytes: number;
  samples: number;
  /** Median milliseconds per operation over the rounds. */
  msPerParse: { full: number; adapterGauges: number; vllmAdapter: number; jsonParseSameSize: number };
}

const ROUNDS = 7;
const ITERATIONS = 40;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

function timePerOp(fn: () => unknown): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) fn();
  return Number(process.hrtime.bigint() - started) / 1e6 / ITERATIONS;
}

export async function run(): Promise<ParseCost> {
  const page = makeVllmMetrics({ engines: 8 });
  // The same samples as JSON: what parsing costs when the structure comes for free.
  const doc = parsePrometheusText(page);
  const jsonDoc = JSON.stringify(
    [...doc.names()].flatMap((n) => doc.get(n).map((x) => ({ ...x, labels: { ...x.labels } }))),
  );
  const gauges = new Set([
    'vllm:num_requests_running',
    'vllm:num_requests_waiting',
    'vllm:kv_cache_usage_perc',
  ]);
  const adapter = new VllmSource();
  let at = 0;
  const variants = {
    full: () => parsePrometheusText(page),
    adapterGauges: () => parsePrometheusText(page, { only: (n) => gauges.has(n) }),
    vllmAdapter: () =>
      adapter.fromDocument(parsePrometheusText(page, { only: (n) => gauges.has(n) }), (at += 1000)),
    jsonParseSameSize: () => JSON.parse(jsonDoc) as unknown,
  };
  for (const fn of Object.values(variants)) timePerOp(fn); // warm-up
  const samples: Record<keyof typeof variants, number[]> = {
    full: [],
    adapterGauges: [],
    vllmAdapter: [],
    jsonParseSameSize: [],
  };
  // Interleaved rounds so machine noise hits every variant alike.
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, fn] of Object.entries(variants) as [keyof typeof variants, () => unknown][]) {
      samples[name].push(timePerOp(fn));
    }
  }
  return {
    pageBytes: page.length,
    jsonBytes: jsonDoc.length,
    samples: parsePrometheusText(page).size,
    msPerParse: {
      full: median(samples.full),
      adapterGauges: median(samples.adapterGauges),
      vllmAdapter: median(samples.vllmAdapter),
      jsonParseSameSize: median(samples.jsonParseSameSize),
    },
  };
}

export function print(result: ParseCost): void {
  const { full, adapterGauges, vllmAdapter, jsonParseSameSize } = result.msPerParse;
  console.log(
    `\nPrometheus text parse, ${(result.pageBytes / 1024).toFixed(0)} KB vLLM /metrics, ${result.samples} samples ` +
      `(median of ${ROUNDS} rounds of ${ITERATIONS})`,
  );
  const row = (label: string, ms: number, bytes = result.pageBytes) =>
    console.log(
      `  ${label.padEnd(42)} ${ms.toFixed(3).padStart(8)} ms  ${(bytes / 1024 / 1024 / (ms / 1000)).toFixed(0).padStart(5)} MB/s  ${(ms / jsonParseSameSize).toFixed(1).padStart(5)}x JSON.parse`,
    );
  row('full parse', full);
  row('only the adapter gauges', adapterGauges);
  row('vLLM adapter (parse + map to snapshot)', vllmAdapter);
  row(
    `JSON.parse of the same samples (${(result.jsonBytes / 1024).toFixed(0)} KB)`,
    jsonParseSameSize,
    result.jsonBytes,
  );
  console.log(`full parse target "a few ms": ${full < 5 ? 'met' : 'MISSED'}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  print(await run());
}
