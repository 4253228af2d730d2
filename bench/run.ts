// `npm run bench`: every micro-benchmark, one after another, in one process so ratios compare like with like.
import { mkdir, writeFile } from 'node:fs/promises';
import * as pickCost from './pick-cost.js';
import * as promParse from './prometheus-parse.js';
import * as proxyBench from './proxy.js';
import * as extProc from './ext-proc.js';
import * as prefixPolicies from './prefix-policies.js';
import * as sharedState from './shared-state.js';

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
const ep = await extProc.run();
extProc.print(ep);
results.extProc = ep;
const prefix = await prefixPolicies.run();
prefixPolicies.print(prefix);
results.prefixPolicies = prefix;
const ss = await sharedState.run();
sharedState.print(ss);
results.sharedState = ss;

await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/bench.json', `${JSON.stringify(results, null, 2)}\n`);
console.log('\nwrote bench/results/bench.json');
