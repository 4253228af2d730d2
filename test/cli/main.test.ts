import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';

const CLI = ['--import', 'tsx', 'src/cli/run.ts'];

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('--help lists every contract flag and exits 0', async () => {
  const { code, stdout } = await run(['serve', '--help']);
  assert.equal(code, 0);
  for (const flag of [
    '--config',
    '--worker',
    '--engine',
    '--policy',
    '--lambda',
    '--poll-interval',
    '--ext-proc-port',
    '--proxy-port',
    '--metrics-port',
    '--host',
  ]) {
    assert.ok(stdout.includes(flag), flag);
  }
});

test('a bad flag value prints the field and reason and exits 2', async () => {
  const { code, stderr } = await run(['serve', '--lambda', 'NaN']);
  assert.equal(code, 2);
  assert.match(stderr, /policy\.lambda: must be finite and >= 0, got NaN/);
  const policy = await run(['serve', '--policy', 'fastest']);
  assert.equal(policy.code, 2);
  assert.match(policy.stderr, /valid policies: random, round_robin, power_of_two, least_load, weighted/);
  const unknown = await run(['serve', '--no-such-flag']);
  assert.equal(unknown.code, 2);
});

test('--print-config shows the resolved config with schema defaults', async () => {
  const { code, stdout } = await run([
    'serve',
    '--worker',
    'http://a:1',
    '--policy',
    'least_load',
    '--print-config',
  ]);
  assert.equal(code, 0);
  const config = JSON.parse(stdout);
  assert.equal(config.policy.name, 'least_load');
  assert.equal(config.policy.lambda, 1.5);
  assert.equal(config.policy.mode, 'expected_wait', 'the measured default');
  assert.equal(config.envoy.port, 9002);
  assert.equal(config.workers[0].url, 'http://a:1');
});
