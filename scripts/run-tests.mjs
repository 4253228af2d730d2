#!/usr/bin/env node
// Node 20's test runner does not expand globs, so collect test/**/*.test.ts here and hand the
// list to `node --import tsx --test`. Extra arguments pass through (e.g. a file to run alone).
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

function findTests(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...findTests(path));
    else if (entry.name.endsWith('.test.ts')) out.push(path);
  }
  return out.sort();
}

const args = process.argv.slice(2);
const files = args.length > 0 ? args : findTests('test');
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-timeout=120000', ...files], {
  stdio: 'inherit',
});
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
