// Cost of the key- and prefix-aware policies on 2 KB prompts whose first half is one of 64 shared
// prefixes and whose second half is unique, over 16 workers with 32 requests kept in flight: ns per
// select (cache_aware's includes its radix-tree insert and evictions) and the tree's heap after
// 100,000 requests. The policies advance through the same request stream in lockstep, one batch of
// 100 each in turn (small, so the batch's prompts do not weigh on the young generation), so load from other processes hits them alike; the median batch is the typical
// cost and the fastest batch the cost on a quiet machine. Compare ratios rather than absolutes.
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { seededRng } from '../src/core/random.js';
import { Worker } from '../src/core/worker.js';
import { CacheAwarePolicy } from '../src/policies/cache-aware.js';
import { ConsistentHashingPolicy } from '../src/policies/consistent-hashing.js';
import { LeastLoadPolicy } from '../src/policies/least-load.js';
import { ManualPolicy } from '../src/policies/manual.js';
import type { Policy, PolicyEnv, RequestContext } from '../src/policies/policy.js';
import { PrefixHashPolicy } from '../src/policies/prefix-hash.js';
import { DEFAULT_ROUTING_KEY_HEADERS } from '../src/policies/routing-key.js';

const WORKERS = 16;
const REQUESTS = 100_000;
const BATCH = 100;
const PREFIXES = 64;
const SUFFIXES = 1024;
const HALF = 1024;
const IN_FLIGHT = 32;

export interface PolicyResult {
  medianNsPerPick: number;
  bestNsPerPick: number;
  /** cache_aware only: share of picks that were cache hits. */
  hitRate?: number;
}

export interface PrefixPoliciesResult {
  workers: number;
  requests: number;
  promptChars: number;
  policies: Record<string, PolicyResult>;
  tree: { heapMB: number; chars: number; maxCharsPerWorker: number; nodes: number; bytesPerChar: number };
}

function text(rng: () => number, n: number): string {
  let s = '';
  while (s.length < n) s += `${Math.floor(rng() * 1e9).toString(36)} `;
  return s.slice(0, n);
}

function makePolicies(env: PolicyEnv): Record<string, Policy> {
  return {
    least_load: new LeastLoadPolicy({ lambda: 1.5 }, env),
    consistent_hashing: new ConsistentHashingPolicy(
      { headers: DEFAULT_ROUTING_KEY_HEADERS, virtualNodes: 150 },
      env,
    ),
    manual: new ManualPolicy(
      {
        headers: DEFAULT_ROUTING_KEY_HEADERS,
        subPolicy: 'least_in_flight',
        ttlSecs: 14_400,
        maxKeys: 100_000,
      },
      env,
    ),
    prefix_hash: new PrefixHashPolicy({ prefixChars: 256, loadFactor: 1.25, virtualNodes: 150 }, env),
    cache_aware: new CacheAwarePolicy(
      {
        cacheThreshold: 0.3,
        balanceAbsThreshold: 64,
        balanceRelThreshold: 1.5,
        kvOverloadThreshold: 0.95,
        maxCharsPerWorker: 2_000_000,
      },
      env,
    ),
  };
}

interface Lane {
  policy: Policy;
  workers: Worker[];
  open: (Worker | undefined)[];
  samples: number[];
  hits: number;
}

function treeStats(lane: Lane): { chars: number; maxCharsPerWorker: number; nodes: number } {
  const tree = (lane.policy as CacheAwarePolicy).tree;
  let chars = 0;
  for (const w of lane.workers) chars += tree.charsOf(w.id);
  return { chars, maxCharsPerWorker: tree.maxCharsPerWorker, nodes: tree.nodeCount };
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

// Lanes are built and run in plain functions: a local of the async run() would keep the tree alive.
function makeLanes(env: PolicyEnv): Map<string, Lane> {
  const lanes = new Map<string, Lane>();
  for (const [name, policy] of Object.entries(makePolicies(env))) {
    const workers = Array.from({ length: WORKERS }, (_, i) => new Worker(`http://10.0.1.${i + 1}:8000`));
    lanes.set(name, { policy, workers, open: new Array(IN_FLIGHT).fill(undefined), samples: [], hits: 0 });
  }
  return lanes;
}

/** Runs every lane through the same request stream in lockstep, one batch each in turn. */
function runLanes(lanes: ReadonlyMap<string, Lane>): void {
  const textRng = seededRng(2);
  const prefixes = Array.from({ length: PREFIXES }, () => text(textRng, HALF));
  const suffixes = Array.from({ length: SUFFIXES }, () => text(textRng, HALF - 8));
  const rng = seededRng(3);
  for (let from = 0; from < REQUESTS; from += BATCH) {
    // Flat strings, as a JSON body parser hands them over.
    const ctxs: RequestContext[] = [];
    for (let i = from; i < from + BATCH; i++) {
      const p = Math.floor(rng() * PREFIXES);
      const body = JSON.stringify(`${prefixes[p]}${i} ${suffixes[Math.floor(rng() * SUFFIXES)]}`);
      ctxs.push({
        prompt: JSON.parse(body) as string,
        model: 'm',
        headers: { 'x-session-id': `s${p}-${i % 97}` },
      });
    }
    for (const lane of lanes.values()) {
      const { policy, workers, open } = lane;
      const cacheAware = policy instanceof CacheAwarePolicy ? policy : undefined;
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < BATCH; i++) {
        const w = policy.select(workers, ctxs[i] as RequestContext) as Worker;
        w.inFlight += 1;
        const slot = (from + i) % IN_FLIGHT;
        const done = open[slot];
        if (done !== undefined) done.inFlight -= 1;
        open[slot] = w;
        if (cacheAware?.lastReason === 'cache_hit') lane.hits += 1;
      }
      lane.samples.push(Number(process.hrtime.bigint() - t0) / BATCH);
    }
  }
}

function summarize(lanes: ReadonlyMap<string, Lane>): Record<string, PolicyResult> {
  const policies: Record<string, PolicyResult> = {};
  for (const [name, lane] of lanes) {
    policies[name] = { medianNsPerPick: median(lane.samples), bestNsPerPick: Math.min(...lane.samples) };
    if (lane.policy instanceof CacheAwarePolicy) policies[name].hitRate = lane.hits / REQUESTS;
  }
  return policies;
}

export async function run(): Promise<PrefixPoliciesResult> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const env: PolicyEnv = { rng: seededRng(1), now: () => 1_000_000, staleAfterMs: 3000 };
  const lanes = makeLanes(env);
  runLanes(lanes);
  const policies = summarize(lanes);
  const stats = treeStats(lanes.get('cache_aware') as Lane);
  // The tree's heap: what is retained now minus what is left once the cache_aware policy is dropped.
  gc();
  const withTree = process.memoryUsage().heapUsed;
  lanes.delete('cache_aware');
  gc();
  const heap = withTree - process.memoryUsage().heapUsed;
  return {
    workers: WORKERS,
    requests: REQUESTS,
    promptChars: 2 * HALF,
    policies,
    tree: { heapMB: heap / 1e6, ...stats, bytesPerChar: heap / stats.chars },
  };
}

export function print(r: PrefixPoliciesResult): void {
  console.log(
    `\nkey/prefix-aware policies: ${r.requests.toLocaleString('en')} requests of ${r.promptChars} chars ` +
      `(first half one of ${PREFIXES} shared prefixes), ${r.workers} workers, ${IN_FLIGHT} in flight`,
  );
  console.log(
    `  ${'policy'.padEnd(20)} ${'median'.padStart(8)} ${'best'.padStart(8)}  ns per select, batches of ${BATCH}`,
  );
  const base = r.policies.least_load?.medianNsPerPick ?? NaN;
  for (const [name, p] of Object.entries(r.policies)) {
    const hit = p.hitRate === undefined ? '' : `  cache hits ${(100 * p.hitRate).toFixed(1)}%`;
    console.log(
      `  ${name.padEnd(20)} ${p.medianNsPerPick.toFixed(0).padStart(8)} ${p.bestNsPerPick.toFixed(0).padStart(8)}` +
        `  (median ${(p.medianNsPerPick / base).toFixed(1)}x least_load)${hit}`,
    );
  }
  const t = r.tree;
  console.log(
    `  cache_aware tree after ${r.requests.toLocaleString('en')} requests: ${t.heapMB.toFixed(1)} MB heap for ` +
      `${t.chars.toLocaleString('en')} chars charged (budget ${t.maxCharsPerWorker.toLocaleString('en')} x ${r.workers}), ` +
      `${t.nodes.toLocaleString('en')} nodes, ${t.bytesPerChar.toFixed(2)} heap bytes per charged char`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) print(await run());
