// One policy's pick() cost and allocation, measured in a process of its own on the compiled dist/
// with plain node: a TypeScript loader in the process (tsx) changes what V8 allocates, and other
// policies in the same process would make the router's call sites polymorphic.
// Usage: node --expose-gc --max-semi-space-size=64 bench/pick-child.mjs <policy>  → JSON on stdout
import { Lease, createRouter, seededRng } from '../dist/index.js';

const SIZES = [4, 16, 64, 256];
const RUNS = 7;
const PICKS = 200_000;
// A policy name, or a policy config as JSON (e.g. least_load in seed mode).
const arg = process.argv[2] ?? 'least_load';
const policy = arg.startsWith('{') ? JSON.parse(arg) : arg;

function fleet(n) {
  const workers = Array.from({ length: n }, (_, i) => `http://10.${i >> 8}.${i & 255}.1:8000`);
  const router = createRouter({ workers, policy }, { rng: seededRng(n) });
  const rng = seededRng(99);
  const now = Date.now();
  for (const w of router.pool.list()) {
    w.load = { at: now + 3_600_000, kvUsage: rng() * 0.9, running: 4, waiting: 0 }; // fresh all run
    w.inFlight = Math.floor(rng() * 8);
  }
  return router;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Pick and release in pairs, so in-flight stays level and every pick does the same work.
function loop(router, picks) {
  for (let i = 0; i < picks; i++) router.pick().release();
}

function nsPerPick(router) {
  loop(router, 20_000);
  const samples = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    loop(router, PICKS);
    samples.push(Number(process.hrtime.bigint() - t0) / PICKS);
  }
  return median(samples);
}

// Heap growth over a run that fits the young generation is what was allocated; results go to a
// sink so the optimizer cannot elide the allocation being measured.
const sink = new Array(1024).fill(null);
function bytesPer(fn, calls = 20_000) {
  const samples = [];
  for (let r = 0; r < RUNS; r++) {
    globalThis.gc?.();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < calls; i++) sink[i & 1023] = fn();
    samples.push((process.memoryUsage().heapUsed - before) / calls);
  }
  return median(samples);
}

const router = fleet(64);
loop(router, 100_000);
const bytesPerPick = bytesPer(() => {
  const lease = router.pick();
  lease.release();
  return lease;
});
const someone = router.pool.list()[0];
const hook = () => {};
const bare = () => new Lease(someone, hook);
for (let i = 0; i < 100_000; i++) sink[i & 1023] = bare();
const bytesPerLease = bytesPer(bare);

const ns = {};
for (const n of SIZES) ns[n] = nsPerPick(fleet(n));
process.stdout.write(JSON.stringify({ nsPerPick: ns, bytesPerPick, bytesPerLease }));
