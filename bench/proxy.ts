// Proxy overhead of leastLoadRouter() against a bare http-proxy-middleware app that forwards to a
// fixed worker: same worker, same run, alternating order. The load generator (autocannon) and the
// worker run in this process; both proxies run in one child process, so the client's CPU is not
// charged to them. Run alone: node --import tsx bench/proxy.ts
// (BENCH_PROXY_ROUNDS=6 and BENCH_PROXY_SECONDS=1.5 per variant and round by default)
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { EventEmitter } from 'node:events';

const CHILD_FLAG = '--proxy-child';
const SELF = fileURLToPath(import.meta.url);
const CONNECTIONS = 32;
// Many short alternating rounds, compared pairwise: the machine is shared, and its load drifts
// more between runs a few seconds apart than the difference we are measuring.
const ROUNDS = Number(process.env.BENCH_PROXY_ROUNDS ?? 6);
const SECONDS = Number(process.env.BENCH_PROXY_SECONDS ?? 1.5);

interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  method?: string;
  body?: string;
  headers?: Record<string, string>;
}
interface AutocannonResult {
  errors: number;
  timeouts: number;
  non2xx: number;
}
type Autocannon = (opts: AutocannonOptions) => EventEmitter & PromiseLike<AutocannonResult>;
// autocannon ships no types; this is the part of its programmatic API we use.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
}

const CHAT_BODY = JSON.stringify({
  model: 'bench',
  messages: [
    { role: 'system', content: 'You are a helpful assistant. '.repeat(8) },
    { role: 'user', content: 'Summarize the following text. '.repeat(20) },
  ],
  max_tokens: 64,
});

const SCENARIOS: Scenario[] = [
  { name: 'GET /v1/models', method: 'GET', path: '/v1/models' },
  {
    name: `POST /v1/chat/completions (${CHAT_BODY.length} B body)`,
    method: 'POST',
    path: '/v1/chat/completions',
    body: CHAT_BODY,
  },
];

const ANSWER = JSON.stringify({
  id: 'cmpl-bench',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok '.repeat(40) }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 300, completion_tokens: 40, total_tokens: 340 },
});

export interface VariantResult {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time (user + system) the proxy process spent per request: robust to other load on the machine. */
  cpuUsPerRequest: number;
  errors: number;
}

export interface ScenarioResult {
  /** Means over the rounds. */
  bare: VariantResult;
  llr: VariantResult;
  /**
   * llr / bare, the median over rounds of each round's pair (run back to back): below 1 for
   * throughput and above 1 for latency means overhead.
   */
  ratio: { requestsPerSec: number; p50: number; p99: number; cpuPerRequest: number };
}

export interface ProxyBenchResult {
  node: string;
  connections: number;
  seconds: number;
  rounds: number;
  scenarios: Record<string, ScenarioResult>;
}

function startWorker(): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(ANSWER) });
      res.end(ANSWER);
    });
  });
  server.keepAliveTimeout = 30_000;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

interface Proxies {
  child: ChildProcess;
  bare: string;
  llr: string;
  /** Answers the child's process.cpuUsage(). */
  control: string;
}

async function startProxies(workerUrl: string): Promise<Proxies> {
  const child = spawn(process.execPath, ['--import', 'tsx', SELF, CHILD_FLAG, workerUrl], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const [line] = (await once(lines, 'line')) as [string];
  const ports = JSON.parse(line) as { bare: number; llr: number; control: number };
  const at = (port: number) => `http://127.0.0.1:${port}`;
  return { child, bare: at(ports.bare), llr: at(ports.llr), control: at(ports.control) };
}

async function proxyCpuMicros(control: string): Promise<number> {
  const usage = (await (await fetch(control)).json()) as NodeJS.CpuUsage;
  return usage.user + usage.system;
}

/** One autocannon run; latencies taken from every response at full precision (autocannon's histogram keeps whole ms). */
async function measure(
  base: string,
  control: string,
  scenario: Scenario,
  seconds: number,
): Promise<VariantResult> {
  const times: number[] = [];
  const cpuBefore = await proxyCpuMicros(control);
  const instance = autocannon({
    url: `${base}${scenario.path}`,
    connections: CONNECTIONS,
    duration: seconds,
    method: scenario.method,
    ...(scenario.body ? { body: scenario.body, headers: { 'content-type': 'application/json' } } : {}),
  });
  instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    if (status === 200) times.push(ms);
  });
  const result = await instance;
  const cpu = (await proxyCpuMicros(control)) - cpuBefore;
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? NaN;
  return {
    requestsPerSec: times.length / seconds,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    cpuUsPerRequest: cpu / times.length,
    errors: result.errors + result.timeouts + result.non2xx,
  };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
const pairRatios = (llr: VariantResult[], bare: VariantResult[], key: keyof VariantResult) =>
  median(llr.map((r, i) => r[key] / (bare[i] as VariantResult)[key]));

function combine(runs: VariantResult[]): VariantResult {
  return {
    requestsPerSec: mean(runs.map((r) => r.requestsPerSec)),
    p50Ms: mean(runs.map((r) => r.p50Ms)),
    p99Ms: mean(runs.map((r) => r.p99Ms)),
    cpuUsPerRequest: mean(runs.map((r) => r.cpuUsPerRequest)),
    errors: runs.reduce((a, r) => a + r.errors, 0),
  };
}

export async function run(): Promise<ProxyBenchResult> {
  const worker = await startWorker();
  const workerUrl = `http://127.0.0.1:${(worker.address() as AddressInfo).port}`;
  const proxies = await startProxies(workerUrl);
  const scenarios: Record<string, ScenarioResult> = {};
  try {
    for (const scenario of SCENARIOS) {
      // Warm both (JIT, sockets) before anything is recorded.
      await measure(proxies.bare, proxies.control, scenario, 1);
      await measure(proxies.llr, proxies.control, scenario, 1);
      // Alternating order, so neither variant always runs on the warmer (or busier) side.
      const runs: Record<'bare' | 'llr', VariantResult[]> = { bare: [], llr: [] };
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? (['bare', 'llr'] as const) : (['llr', 'bare'] as const);
        for (const variant of order)
          runs[variant].push(await measure(proxies[variant], proxies.control, scenario, SECONDS));
      }
      scenarios[scenario.name] = {
        bare: combine(runs.bare),
        llr: combine(runs.llr),
        ratio: {
          requestsPerSec: pairRatios(runs.llr, runs.bare, 'requestsPerSec'),
          p50: pairRatios(runs.llr, runs.bare, 'p50Ms'),
          p99: pairRatios(runs.llr, runs.bare, 'p99Ms'),
          cpuPerRequest: pairRatios(runs.llr, runs.bare, 'cpuUsPerRequest'),
        },
      };
    }
  } finally {
    proxies.child.kill();
    await new Promise<void>((resolve) => worker.close(() => resolve()));
    worker.closeAllConnections();
  }
  return { node: process.version, connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS, scenarios };
}

export function print(result: ProxyBenchResult): void {
  console.log(
    `\nproxy overhead: leastLoadRouter vs bare http-proxy-middleware, ${result.connections} connections, ` +
      `${result.rounds} x ${result.seconds} s per variant, alternating; ratios are medians of per-round pairs`,
  );
  const row = (label: string, r: VariantResult) =>
    `  ${label.padEnd(6)} ${r.requestsPerSec.toFixed(0).padStart(8)} req/s  p50 ${r.p50Ms.toFixed(2).padStart(6)} ms  ` +
    `p99 ${r.p99Ms.toFixed(2).padStart(6)} ms  proxy CPU ${r.cpuUsPerRequest.toFixed(0).padStart(4)} us/req  errors ${r.errors}`;
  for (const [name, s] of Object.entries(result.scenarios)) {
    console.log(name);
    console.log(row('bare', s.bare));
    console.log(row('llr', s.llr));
    const met = s.ratio.requestsPerSec >= 0.9 && s.ratio.p50 <= 1.1;
    console.log(
      `  ratio llr/bare: req/s ${s.ratio.requestsPerSec.toFixed(3)}, p50 ${s.ratio.p50.toFixed(3)}, ` +
        `p99 ${s.ratio.p99.toFixed(3)}, CPU/req ${s.ratio.cpuPerRequest.toFixed(3)} ` +
        `(target: req/s >= 0.9 and p50 <= 1.1): ${met ? 'met' : 'MISSED'}`,
    );
  }
}

async function serveProxies(workerUrl: string): Promise<void> {
  const [{ default: express }, { createProxyMiddleware }, { leastLoadRouter }] = await Promise.all([
    import('express'),
    import('http-proxy-middleware'),
    import('../src/express/middleware.js'),
  ]);
  const listen = (app: ReturnType<typeof express>) =>
    new Promise<number>((resolve) => {
      const server = app.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
      server.keepAliveTimeout = 30_000;
    });
  const bare = express();
  // Same upstream transport as ours (a keep-alive agent). With http-proxy's default (no agent) the
  // worker's `connection: close` reaches the client and every request reconnects: that measures
  // TCP setup, not proxy overhead.
  bare.use(
    createProxyMiddleware({
      target: workerUrl,
      changeOrigin: true,
      agent: new http.Agent({ keepAlive: true }),
    }),
  );
  const llr = express();
  // engine 'none' still health-polls the worker; once every 5 s is noise here.
  llr.use(leastLoadRouter({ workers: [{ url: workerUrl, engine: 'none' }], poller: { intervalSecs: 5 } }));
  const control = express();
  control.get('/', (_req, res) => {
    res.json(process.cpuUsage());
  });
  const ports = { bare: await listen(bare), llr: await listen(llr), control: await listen(control) };
  process.stdout.write(`${JSON.stringify(ports)}\n`);
}

if (process.argv.includes(CHILD_FLAG)) {
  await serveProxies(process.argv[process.argv.indexOf(CHILD_FLAG) + 1] as string);
} else if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  print(await run());
}
