import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/load-config.js';

async function tempFile(name: string, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'llr-config-'));
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

test('a YAML file is read and flags override it', async () => {
  const path = await tempFile(
    'c.yaml',
    `workers:\n  - url: http://10.0.0.5:30000\n    engine: sglang\npolicy: { name: least_load, lambda: 2 }\npoller: { intervalSecs: 5, timeoutMs: 700 }\n`,
  );
  const fromFile = await loadConfig({ config: path });
  assert.deepEqual([fromFile.policy.name, (fromFile.policy as { lambda: number }).lambda], ['least_load', 2]);
  assert.equal(fromFile.poller.intervalSecs, 5);
  assert.equal(fromFile.workers[0]?.engine, 'sglang');

  const flagged = await loadConfig({ config: path, lambda: '0.5', pollInterval: '0.25', metricsPort: '0' });
  assert.deepEqual([flagged.policy.name, (flagged.policy as { lambda: number }).lambda], ['least_load', 0.5]);
  assert.equal(flagged.poller.intervalSecs, 0.25);
  assert.equal(flagged.poller.timeoutMs, 700, 'untouched file keys survive');
  assert.equal(flagged.metrics.port, 0);

  const replaced = await loadConfig({ config: path, worker: ['http://a:1', 'http://b:2'], engine: 'vllm' });
  assert.deepEqual(
    replaced.workers.map((w) => [w.url, w.engine]),
    [
      ['http://a:1', 'vllm'],
      ['http://b:2', 'vllm'],
    ],
  );
  const switched = await loadConfig({ config: path, policy: 'round_robin' });
  assert.deepEqual(switched.policy, { name: 'round_robin' }, "the old policy's lambda is dropped");
});

test('--lambda selects the seed formula unless a mode is given', async () => {
  assert.equal((await loadConfig({})).policy.name, 'least_load');
  assert.equal(((await loadConfig({ lambda: '2' })).policy as { mode: string }).mode, 'seed');
  assert.equal(((await loadConfig({})).policy as { mode: string }).mode, 'expected_wait');
  const path = await tempFile('m.yaml', 'policy: { name: least_load, mode: expected_wait }\n');
  assert.equal(
    ((await loadConfig({ config: path, lambda: '2' })).policy as { mode: string }).mode,
    'expected_wait',
  );
});

test('a JSON file works too', async () => {
  const path = await tempFile('c.json', JSON.stringify({ policy: 'power_of_two', proxy: { port: 8080 } }));
  const config = await loadConfig({ config: path });
  assert.equal(config.policy.name, 'power_of_two');
  assert.equal(config.proxy.port, 8080);
});

test('bad flags and files name the field', async () => {
  await assert.rejects(loadConfig({ lambda: 'abc' }), {
    message: 'policy.lambda: must be finite and >= 0, got NaN',
  });
  await assert.rejects(loadConfig({ pollInterval: '-1' }), { message: /^poller\.intervalSecs: .*got -1$/ });
  await assert.rejects(loadConfig({ extProcPort: '99999' }), { message: /^envoy\.port: / });
  await assert.rejects(loadConfig({ config: '/nonexistent/llr.yaml' }), {
    code: 'LLR_CONFIG',
    message: /cannot read/,
  });
  const broken = await tempFile('bad.yaml', 'workers: [unclosed\n');
  await assert.rejects(loadConfig({ config: broken }), { code: 'LLR_CONFIG', message: /not valid YAML/ });
  const list = await tempFile('list.yaml', '- a\n- b\n');
  await assert.rejects(loadConfig({ config: list }), { code: 'LLR_CONFIG', message: /mapping/ });
});
