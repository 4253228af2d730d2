// Latency the ext_proc server adds per request (request_headers in, header mutation out) against
// the floor of the same stack: a minimal grpc-js ext_proc server on the same proto that answers
// every message with a fixed destination header, no policy. Open loop at fixed stream rates; both
// servers run in one child process (so the client's CPU is not charged to them) and are measured
// in alternating short rounds; ratios are medians of per-round pairs. The pick itself (time inside
// router.pick only) is reported separately. Run alone: node --import tsx bench/ext-proc.ts
// (BENCH_EXTPROC_ROUNDS=12, BENCH_EXTPROC_SECONDS=0.25 per variant, rate and round by default: many
// short rounds, because on a shared machine the load drifts more over seconds than what we measure)
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  Client,
  credentials,
  Metadata,
  Server,
  ServerCredentials,
  type MethodDefinition,
  type ServerDuplexStream,
} from '@grpc/grpc-js';
import type { ProcessingRequest, ProcessingResponse } from '../src/envoy/messages.js';

const CHILD_FLAG = '--ext-proc-child';
const RATES = [500, 1000, 2000];
const ROUNDS = Number(process.env.BENCH_EXTPROC_ROUNDS ?? 12);
const SECONDS = Number(process.env.BENCH_EXTPROC_SECONDS ?? 0.25);
const WORKERS = 16;
const TARGET = 1.25;

type Variant = 'floor' | 'ours';
type ProcessMethod = MethodDefinition<ProcessingRequest, ProcessingResponse>;

interface Quantiles {
  p50: number;
  p99: number;
}
interface RoundResult extends Quantiles {
  latencies: number[];
  errors: number;
  /** Server process CPU (user + system) per stream, microseconds. */
  cpuUs: number;
}
interface VariantSummary extends Quantiles {
  cpuUsPerStream: number;
}
export interface RateResult {
  rate: number;
  /** Quantiles over every stream of every round. */
  floor: VariantSummary;
  ours: VariantSummary;
  /** ours/floor of the pooled quantiles (a round holds too few streams for a stable p99 of its own). */
  ratio: Quantiles & { cpu: number };
  /** Medians of per-round ours/floor ratios, for comparison. */
  pairRatio: Quantiles;
  errors: number;
}
export interface ExtProcBenchResult {
  node: string;
  workers: number;
  rounds: number;
  secondsPerRound: number;
  rates: RateResult[];
  /** Microseconds inside router.pick (least_load over `workers` workers), all rates together. */
  pickUs: Quantiles & { picks: number };
}

/** The header mutation Envoy would see; both servers get the same, as Envoy sends it. */
function requestHeaders(i: number): ProcessingRequest {
  const raw = (key: string, value: string) => ({ key, raw_value: Buffer.from(value) });
  return {
    request_headers: {
      headers: {
        headers: [
          raw(':authority', 'gateway.example'),
          raw(':path', '/v1/chat/completions'),
          raw(':method', 'POST'),
          raw(':scheme', 'https'),
          raw('content-type', 'application/json'),
          raw('content-length', '512'),
          raw('user-agent', 'bench/1.0'),
          raw('x-forwarded-proto', 'https'),
          raw('x-request-id', `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`),
        ],
      },
      end_of_stream: false,
    },
  };
}
const RESPONSE_HEADERS: ProcessingRequest = {
  response_headers: { headers: { headers: [{ key: ':status', raw_value: Buffer.from('200') }] } },
};

const quantiles = (xs: number[]): Quantiles => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99) };
};
const median = (xs: number[]) => quantiles(xs).p50;

/**
 * Opens `rate` streams per second for `seconds`, each as Envoy would (request headers, then the
 * response headers, then half-close), without waiting for earlier ones: an open loop, so a slow
 * server meets the same arrival rate. Latency: request_headers written to its answer received.
 */
async function openLoop(
  client: Client,
  method: ProcessMethod,
  rate: number,
  seconds: number,
): Promise<RoundResult> {
  const total = Math.round(rate * seconds);
  const latencies: number[] = [];
  let errors = 0;
  let done = 0;
  let finished: () => void = () => undefined;
  const allDone = new Promise<void>((resolve) => (finished = resolve));
  const complete = () => {
    if (++done === total) finished();
  };
  const start = (i: number) => {
    const call = client.makeBidiStreamRequest(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      new Metadata(),
      {},
    );
    let sent = 0;
    let answers = 0;
    call.on('data', () => {
      answers += 1;
      if (answers === 1) {
        latencies.push(performance.now() - sent);
        call.write(RESPONSE_HEADERS);
      } else {
        call.end();
      }
    });
    call.on('error', () => void errors++);
    call.on('status', complete);
    sent = performance.now();
    call.write(requestHeaders(i));
  };
  const began = performance.now();
  let launched = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - began) / 1000) * rate));
      while (launched < due) start(launched++);
      if (launched < total) setImmediate(tick);
      else resolve();
    };
    tick();
  });
  await allDone;
  return { ...quantiles(latencies), latencies, errors, cpuUs: 0 };
}

interface ChildPorts {
  floor: number;
  ours: number;
}
type ChildMessage = { ports: ChildPorts } | { picks: number[] } | { cpu: NodeJS.CpuUsage };

function request<T>(
  child: ChildProcess,
  message: string,
  pick: (m: ChildMessage) => T | undefined,
): Promise<T> {
  return new Promise((resolve) => {
    const onMessage = (m: ChildMessage) => {
      const value = pick(m);
      if (value === undefined) return;
      child.off('message', onMessage);
      resolve(value);
    };
    child.on('message', onMessage);
    if (message) child.send(message);
  });
}

export async function run(): Promise<ExtProcBenchResult> {
  const { loadProtos } = await import('../src/envoy/proto-loader.js');
  const method = loadProtos().extProc.Process as ProcessMethod;
  const child = fork(fileURLToPath(import.meta.url), [CHILD_FLAG], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const ports = await request(child, '', (m) => ('ports' in m ? m.ports : undefined));
    const clients: Record<Variant, Client> = {
      floor: new Client(`127.0.0.1:${ports.floor}`, credentials.createInsecure()),
      ours: new Client(`127.0.0.1:${ports.ours}`, credentials.createInsecure()),
    };
    // Warm both (JIT, HTTP/2 connection) before anything is recorded.
    for (const v of ['floor', 'ours'] as const) await openLoop(clients[v], method, 500, 1);
    await request(child, 'picks', (m) => ('picks' in m ? m.picks : undefined));
    const cpu = async () => {
      const c = await request(child, 'cpu', (m) => ('cpu' in m ? m.cpu : undefined));
      return c.user + c.system;
    };
    const rates: RateResult[] = [];
    for (const rate of RATES) {
      const runs: Record<Variant, RoundResult[]> = { floor: [], ours: [] };
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? (['floor', 'ours'] as const) : (['ours', 'floor'] as const);
        for (const v of order) {
          const before = await cpu();
          const r = await openLoop(clients[v], method, rate, SECONDS);
          r.cpuUs = ((await cpu()) - before) / r.latencies.length;
          runs[v].push(r);
        }
      }
      const pair = (key: keyof Quantiles | 'cpuUs') =>
        median(runs.ours.map((r, i) => r[key] / (runs.floor[i] as RoundResult)[key]));
      const summary = (rs: RoundResult[]): VariantSummary => ({
        ...quantiles(rs.flatMap((r) => r.latencies)),
        cpuUsPerStream: median(rs.map((r) => r.cpuUs)),
      });
      const floor = summary(runs.floor);
      const ours = summary(runs.ours);
      rates.push({
        rate,
        floor,
        ours,
        ratio: { p50: ours.p50 / floor.p50, p99: ours.p99 / floor.p99, cpu: pair('cpuUs') },
        pairRatio: { p50: pair('p50'), p99: pair('p99') },
        errors: [...runs.floor, ...runs.ours].reduce((a, r) => a + r.errors, 0),
      });
    }
    const picks = await request(child, 'picks', (m) => ('picks' in m ? m.picks : undefined));
    for (const c of Object.values(clients)) c.close();
    return {
      node: process.version,
      workers: WORKERS,
      rounds: ROUNDS,
      secondsPerRound: SECONDS,
      rates,
      pickUs: { ...quantiles(picks), picks: picks.length },
    };
  } finally {
    child.kill();
  }
}

export function print(result: ExtProcBenchResult): void {
  console.log(
    `\next_proc added latency (request_headers in, answer out), ours vs a minimal grpc-js floor, open loop; ` +
      `${result.rounds} alternating rounds of ${result.secondsPerRound} s per variant and rate`,
  );
  console.log(
    '  latency quantiles pooled over all rounds (ratio ours/floor); CPU: median per round, ratio of per-round pairs',
  );
  console.log(
    '  streams/s   floor p50    ours p50  ratio   floor p99    ours p99  ratio   server CPU/stream floor  ours  ratio',
  );
  const ms = (x: number) => `${x.toFixed(3)} ms`.padStart(11);
  const us = (x: number) => `${x.toFixed(0)} us`.padStart(6);
  for (const r of result.rates) {
    console.log(
      `  ${String(r.rate).padStart(9)} ${ms(r.floor.p50)} ${ms(r.ours.p50)} ${r.ratio.p50.toFixed(2).padStart(6)} ` +
        `${ms(r.floor.p99)} ${ms(r.ours.p99)} ${r.ratio.p99.toFixed(2).padStart(6)}   ` +
        `${' '.repeat(14)}${us(r.floor.cpuUsPerStream)} ${us(r.ours.cpuUsPerStream)} ${r.ratio.cpu.toFixed(2).padStart(6)}` +
        (r.errors > 0 ? `  errors ${r.errors}` : ''),
    );
  }
  const worst = Math.max(...result.rates.flatMap((r) => [r.ratio.p50, r.ratio.p99]));
  console.log(
    `  worst latency ratio ${worst.toFixed(2)} (target <= ${TARGET} at p50 and p99): ${worst <= TARGET ? 'met' : 'MISSED'}`,
  );
  const p = result.pickUs;
  console.log(
    `  the pick itself (inside router.pick, least_load over ${result.workers} workers, ${p.picks} picks): ` +
      `p50 ${p.p50.toFixed(2)} us, p99 ${p.p99.toFixed(2)} us`,
  );
}

/** The child: our server (least_load over WORKERS fake workers with fresh loads) and the floor. */
async function serveBoth(): Promise<void> {
  const [{ createExtProcServer }, { loadProtos }, { routeResponse }, { createRouter }, { seededRng }] =
    await Promise.all([
      import('../src/envoy/ext-proc-server.js'),
      import('../src/envoy/proto-loader.js'),
      import('../src/envoy/responses.js'),
      import('../src/router.js'),
      import('../src/core/random.js'),
    ]);
  const rng = seededRng(42);
  const router = createRouter(
    {
      workers: Array.from({ length: WORKERS }, (_, i) => ({
        url: `http://10.0.${i >> 8}.${i & 255}:8000`,
        engine: 'none' as const,
      })),
      policy: 'least_load',
      // Loads are set once below; a long interval keeps them fresh for the whole run.
      poller: { intervalSecs: 600 },
    },
    { rng },
  );
  for (const w of router.pool.list()) w.load = { at: Date.now(), kvUsage: rng() * 0.9 };
  // Time inside router.pick only, wrapped on the instance the server calls.
  let picks: number[] = [];
  const pick = router.pick.bind(router);
  router.pick = (ctx) => {
    const t0 = performance.now();
    const lease = pick(ctx);
    picks.push((performance.now() - t0) * 1000);
    return lease;
  };
  const ours = await createExtProcServer(router, { port: 0, host: '127.0.0.1' });

  // The floor: same proto, same grpc-js, one constant answer per message, nothing else.
  const fixed = routeResponse('request_headers', 'x-gateway-destination-endpoint', '10.0.0.1:8000');
  const continueHeaders: ProcessingResponse = { response_headers: {} };
  const floor = new Server();
  floor.addService(loadProtos().extProc, {
    Process: (call: ServerDuplexStream<ProcessingRequest, ProcessingResponse>) => {
      call.on('data', (req: ProcessingRequest) => call.write(req.request_headers ? fixed : continueHeaders));
      call.on('end', () => call.end());
      call.on('error', () => undefined);
    },
  });
  const floorPort = await new Promise<number>((resolve, reject) =>
    floor.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(port),
    ),
  );
  process.on('message', (m: string) => {
    if (m === 'picks') {
      process.send?.({ picks });
      picks = [];
    } else if (m === 'cpu') {
      process.send?.({ cpu: process.cpuUsage() });
    }
  });
  process.send?.({ ports: { floor: floorPort, ours: ours.port } });
  await once(process, 'disconnect');
  floor.forceShutdown();
  await ours.close();
}

if (process.argv.includes(CHILD_FLAG)) {
  await serveBoth();
} else if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  print(await run());
}
