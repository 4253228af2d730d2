// `npm run bench`: every micro-benchmark, one after another, in one process so ratios compare like with like.
import { mkdir, writeFile } from 'node:fs/promises';
import * as pickCost from './pick-cost.js';
import * as promParse from './prometheus-parse.js';

const results: Record<string, unknown> = {};
console.log(`least-load-router benchmarks on node ${process.version}, ${new Date().toISOString()}`);
const pick = await pickCost.run();
pickCost.print(pick);
results.pickCost = pick;
const pp = await promParse.run();
promParse.print(pp);
results.prometheusParse = pp;

await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/bench.json', `${JSON.stringify(results, null, 2)}\n`);
console.log('\nwrote bench/results/bench.json');
