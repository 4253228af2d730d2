import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';

test('demo runs a short comparison, prints the URLs and the table, and exits 0', async () => {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/run.ts',
      'demo',
      '--duration',
      '4',
      '--speedup',
      '4',
      '--policies',
      'round_robin,least_load',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  assert.equal(code, 0, stderr);
  assert.match(stdout, /curl -N http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions/);
  assert.match(stdout, /curl http:\/\/127\.0\.0\.1:\d+\/workers/);
  assert.match(stdout, /Envoy ext_proc \(gRPC\) on 127\.0\.0\.1:\d+/);
  assert.match(stdout, /^round_robin\s+\d+\s+0\s+\d+/m, 'a table row with zero errors');
  assert.match(stdout, /^least_load expected_wait\s+\d+\s+0\s+\d+/m);
  assert.doesNotMatch(stderr, /Warning/);
});

test('demo rejects a bad flag with the field and exit 2', async () => {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/run.ts', 'demo', '--policies', 'fastest'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  assert.equal(await new Promise((r) => child.once('exit', r)), 2);
  assert.match(stderr, /policies\.0\.name: unknown policy/);
});
