import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort, until } from '../helpers.js';
import { RouterMetrics } from '../../src/metrics/router-metrics.js';
import { createRouter } from '../../src/router.js';
import { startStatusServer } from '../../src/status/status-server.js';

test('a real Prometheus server scrapes /metrics and reads our values back', async (t) => {
  const router = createRouter({ workers: ['http://10.0.0.1:8000', 'http://10.0.0.2:8000'] });
  const metrics = new RouterMetrics(router);
  const status = await startStatusServer(router, metrics, { port: 0, host: '127.0.0.1' });
  t.after(() => status.close());
  for (let i = 0; i < 7; i++) router.pick().release();

  const dir = await mkdtemp(join(tmpdir(), 'llr-prom-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const config = join(dir, 'prometheus.yml');
  await writeFile(
    config,
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      '  - job_name: llr',
      `    static_configs: [{ targets: ['127.0.0.1:${status.port}'] }]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const prom = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  prom.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  const exited = new Promise((r) => prom.once('exit', r));
  t.after(async () => {
    prom.kill('SIGTERM');
    await exited;
  });
  prom.once('error', (err) => assert.fail(`cannot start prometheus (.ci/run installs it): ${err.message}`));

  const query = `sum(llr_requests_total{job="llr",policy="least_load"})`;
  const total = await until(
    `prometheus to report ${query}`,
    async () => {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(query)}`);
      const body = (await res.json()) as { data: { result: { value: [number, string] }[] } };
      const value = body.data.result[0]?.value[1];
      return value === undefined ? undefined : Number(value);
    },
    60_000,
  );
  assert.equal(total, 7);

  const up = await fetch(
    `http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent('up{job="llr"}')}`,
  );
  const upBody = (await up.json()) as { data: { result: { value: [number, string] }[] } };
  assert.equal(upBody.data.result[0]?.value[1], '1', 'the scrape itself succeeded');
});
