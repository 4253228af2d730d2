// pick() cost per policy and fleet size (ns per pick, median of several runs) and bytes allocated
// per pick against a bare Lease. Each policy runs in its own child process (bench/pick-child.mjs).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { POLICY_NAMES } from '../src/config/schema.js';

const execFileP = promisify(execFile);
/** Every policy by name (its default settings), plus least_load's seed mode. */
const CASES: [string, string][] = [
  ...POLICY_NAMES.map((name): [string, string] => [name, name]),
  ['least_load seed', JSON.stringify({ name: 'least_load', mode: 'seed' })],
];
const SIZES = ['4', '16', '64', '256'];
const CHILD = fileURLToPath(new URL('./pick-child.mjs', import.meta.url));

export interface PolicyCost {
  nsPerPick: Record<string, number>;
  bytesPerPick: number;
  bytesPerLease: number;
}

export async function run(): Promise<Record<string, PolicyCost>> {
  const results: Record<string, PolicyCost> = {};
  for (const [label, policy] of CASES) {
    const { stdout } = await execFileP(
      process.execPath,
      ['--expose-gc', '--max-semi-space-size=64', CHILD, policy],
      {
        encoding: 'utf8',
      },
    );
    results[label] = JSON.parse(stdout) as PolicyCost;
  }
  return results;
}

export function print(results: Record<string, PolicyCost>): void {
  console.log('\npick() cost, ns per pick+release (median of 7 runs of 200,000; one process per policy)');
  console.log(['policy'.padEnd(18), ...SIZES.map((n) => `${n} workers`.padStart(12))].join(''));
  for (const [policy, r] of Object.entries(results)) {
    console.log(
      [policy.padEnd(18), ...SIZES.map((n) => (r.nsPerPick[n] ?? NaN).toFixed(0).padStart(12))].join(''),
    );
  }
  for (const label of ['least_load', 'least_load seed']) {
    const ns = results[label]?.nsPerPick['64'] ?? NaN;
    console.log(
      `${label} @ 64 workers: ${ns.toFixed(0)} ns (target < 2000 ns): ${ns < 2000 ? 'met' : 'MISSED'}`,
    );
  }
  console.log(
    '\nheap bytes allocated per pick+release at 64 workers, against a bare Lease in the same process',
  );
  for (const [policy, r] of Object.entries(results)) {
    const extra = r.bytesPerPick - r.bytesPerLease;
    console.log(
      `  ${policy.padEnd(18)} ${r.bytesPerPick.toFixed(0).padStart(5)} B  (lease ${r.bytesPerLease.toFixed(0)} B, other ${extra.toFixed(0)} B)`,
    );
  }
}
