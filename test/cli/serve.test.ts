import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort, until } from '../helpers.js';
import { startSimServer } from '../../src/sim/sim-server.js';

interface WorkersBody {
  workers: {
    id: string;
    engine: string;
    healthy: boolean;
    kvUsage: number | null;
    lastPollAt: string | null;
  }[];
}

test('serve polls real workers, reloads its config file and SIGHUP, and exits 0 on SIGTERM', async (t) => {
  const a = await startSimServer({ name: 'a', loadFormat: 'sglang' }, { host: '127.0.0.1' });
  const b = await startSimServer({ name: 'b', loadFormat: 'vllm' }, { host: '127.0.0.1' });
  t.after(() => Promise.all([a.close(), b.close()]));
  const dir = await mkdtemp(join(tmpdir(), 'llr-serve-'));
  const file = join(dir, 'llr.yaml');
  const yaml = (urls: string[]) =>
    `workers:\n${urls.map((u) => `  - ${u}\n`).join('')}poller: { intervalSecs: 0.1 }\n`;
  await writeFile(file, yaml([a.url]));
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/run.ts',
      'serve',
      '--config',
      file,
      '--metrics-port',
      String(port),
      '--host',
      '127.0.0.1',
      '--ext-proc-port',
      '0',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  t.after(() => child.kill('SIGKILL'));

  const workers = async () => (await (await fetch(`http://127.0.0.1:${port}/workers`)).json()) as WorkersBody;
  const first = await until('a polled worker', async () => {
    const body = await workers();
    return body.workers[0]?.lastPollAt ? body : undefined;
  });
  assert.equal(first.workers[0]?.engine, 'sglang', 'auto detection is reported');
  assert.equal(first.workers[0]?.kvUsage, 0);
  assert.equal(first.workers[0]?.healthy, true);

  await writeFile(file, yaml([a.url, b.url]));
  const both = await until('the reloaded worker list', async () => {
    const body = await workers();
    return body.workers.length === 2 && body.workers.every((w) => w.lastPollAt) ? body : undefined;
  });
  assert.deepEqual(both.workers.map((w) => w.engine).sort(), ['sglang', 'vllm']);

  await writeFile(file, 'workers: [ftp://nope]\n');
  await until('the rejected reload to be logged', async () =>
    stderr.includes('config reload rejected') ? true : undefined,
  );
  assert.equal((await workers()).workers.length, 2, 'an invalid config keeps the running one');
  assert.match(stderr, /workers\.0\.url/);

  await writeFile(file, yaml([b.url]));
  child.kill('SIGHUP');
  await until('SIGHUP reload', async () => ((await workers()).workers.length === 1 ? true : undefined));

  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.match(stderr, /"msg":"stopped"/);
});
