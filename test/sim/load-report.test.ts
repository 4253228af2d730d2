import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { test } from 'node:test';
import type { SimServer } from '../../src/sim/sim-server.js';
import { get, startWorker, until } from './sim-helpers.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');

/** Keeps one long streaming request running on `w` until the test ends. */
async function busy(t: { after(fn: () => void): void }, w: SimServer): Promise<void> {
  const req = request(`${w.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sim-prompt-tokens': '1500' },
  });
  req.on('error', () => {});
  req.end(JSON.stringify({ prompt: 'x', max_tokens: 4000, stream: true }));
  t.after(() => req.destroy());
  await until(() => w.state().running === 1 && w.state().kvTokens > 0, 'the request to run');
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Just enough of the Prometheus text format to check what we emit. */
function parseProm(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `bad sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { samples, types };
}

test('/v1/loads has the SGLang current envelope with the fixture field names and types', async (t) => {
  const w = await startWorker(t, { loadFormat: 'sglang' }, 1);
  await busy(t, w);
  const res = await get(`${w.url}/v1/loads`);
  assert.equal(res.status, 200);
  const ours = JSON.parse(res.body) as { loads: Record<string, unknown>[] } & Record<string, unknown>;
  const ref = JSON.parse(fixture('sglang-v1-loads.json')) as {
    loads: Record<string, unknown>[];
  } & Record<string, unknown>;
  for (const key of Object.keys(ref)) assert.equal(typeof ours[key], typeof ref[key], `top-level ${key}`);
  assert.equal('dp_rank_count' in ours, false, 'current envelope has no dp_rank_count');
  assert.equal('aggregate' in ours, false, 'current envelope has no aggregate');
  assert.match(String(ours.timestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00$/);
  const refRank = ref.loads[1]!; // the rank without the optional nested sections
  const rank = ours.loads[0]!;
  for (const key of Object.keys(refRank))
    assert.equal(typeof rank[key], typeof refRank[key], `loads[].${key}`);
  const s = w.state();
  assert.equal(rank.dp_rank, 0);
  assert.equal(rank.num_running_reqs, 1);
  assert.equal(rank.num_waiting_reqs, 0);
  assert.equal(rank.max_total_num_tokens, 8000);
  assert.ok((rank.token_usage as number) > 0 && (rank.token_usage as number) <= 1);
  assert.ok(Math.abs((rank.token_usage as number) - s.kvUsage) < 0.01);
  assert.equal((await get(`${w.url}/metrics`)).status, 404, 'an SGLang-format worker has no vLLM metrics');
});

test('/metrics has the vLLM v1 names, labels and 0..1 KV fraction of the fixture', async (t) => {
  const w = await startWorker(t, { loadFormat: 'vllm', dpRanks: 2 }, 1);
  await busy(t, w);
  const res = await get(`${w.url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  const ours = parseProm(res.body);
  const ref = parseProm(fixture('vllm-metrics-v1.txt'));
  const refNames = new Set(ref.samples.map((s) => s.name));
  // Every family we emit that the fixture has must keep its TYPE; the load-bearing ones must exist.
  for (const name of [
    'vllm:num_requests_running',
    'vllm:num_requests_waiting',
    'vllm:kv_cache_usage_perc',
    'vllm:num_preemptions_total',
    'vllm:generation_tokens_total',
  ]) {
    assert.ok(refNames.has(name), `fixture has ${name}`);
    const series = ours.samples.filter((s) => s.name === name);
    assert.equal(series.length, 2, `${name}: one series per engine`);
    assert.deepEqual(
      series.map((s) => Object.keys(s.labels).sort()),
      [
        ['engine', 'model_name'],
        ['engine', 'model_name'],
      ],
    );
    assert.equal(ours.types.get(name), ref.types.get(name), `${name} TYPE`);
    for (const s of series) assert.ok(Number.isFinite(s.value), `${name} value`);
  }
  const bySeries = (name: string) =>
    ours.samples.filter((s) => s.name === name).reduce((a, s) => a + s.value, 0);
  assert.equal(bySeries('vllm:num_requests_running'), 1);
  const kv = ours.samples.filter((s) => s.name === 'vllm:kv_cache_usage_perc').map((s) => s.value);
  assert.ok(
    kv.every((v) => v >= 0 && v <= 1),
    'a fraction, not a percent',
  );
  assert.ok(Math.max(...kv) > 0.1, 'the busy rank shows its KV use');
  assert.equal((await get(`${w.url}/v1/loads`)).status, 404, 'a vLLM-format worker has no /v1/loads');
});
