// `npm run bench`: every micro-benchmark, one after another, in one process so ratios compare like with like.
import { mkdir, writeFile } from 'node:fs/promises';
import * as pickCost from './pick-cost.js';
import * as promParse from './prometheus-parse.js';
import * as proxyBench from './proxy.js';

const results: Record<string, unknown> = {};
console.log(`least-load-router benchmarks on node ${process.version}, ${new Date().toISOString()}`);
const pick = await pickCost.run();
pickCost.print(pick);
results.pickCost = pick;
const pp = await promParse.run();
promParse.print(pp);
results.prometheusParse = pp;
const px = await proxyBench.run();
proxyBench.print(px);
results.proxy = px;

await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/bench.json', `${JSON.stringify(results, null, 2)}\n`);
console.log('\nwrote bench/results/bench.json');
