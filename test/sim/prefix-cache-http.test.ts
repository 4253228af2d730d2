import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import { randomText } from '../../src/sim/conversation-workload.js';
import type { SimStats } from '../../src/sim/sim-server.js';
import { get, post, startWorker } from './sim-helpers.js';

const system = randomText(seededRng(1), 600);
const chat = (user: string) => ({
  messages: [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ],
  max_tokens: 3,
});

test('a repeated chat prefix hits the cache; a size header marks text as filler and never hits', async (t) => {
  const w = await startWorker(t, { loadFormat: 'sglang' });
  assert.equal((await post(`${w.url}/v1/chat/completions`, chat('first question'))).status, 200);
  assert.equal(w.stats().prefixHitTokens, 0);
  assert.ok(w.stats().prefixCachedTokens >= 592, 'the system prompt was cached');
  assert.equal((await post(`${w.url}/v1/chat/completions`, chat('second question'))).status, 200);
  const s = w.stats();
  // Two 16-char role markers and 2400 chars of system prompt match: 2432 chars, 38 whole blocks.
  assert.equal(s.prefixHitTokens, 38 * 16);
  assert.equal(s.prefixQueryTokens, 2 * (8 + 600 + Math.ceil('first question'.length / 4)));
  const viaHttp = JSON.parse((await get(`${w.url}/sim/stats`)).body) as SimStats;
  assert.equal(viaHttp.prefixHitTokens, s.prefixHitTokens);

  const loads = JSON.parse((await get(`${w.url}/v1/loads`)).body) as {
    loads: { cache_hit_rate: number; num_used_tokens: number; num_total_tokens: number }[];
  };
  const rank = loads.loads[0]!;
  assert.equal(rank.cache_hit_rate, Math.round((s.prefixHitTokens / s.prefixQueryTokens) * 1e4) / 1e4);
  assert.equal(rank.num_used_tokens, 0, 'idle: no KV in use');
  assert.equal(rank.num_total_tokens, s.prefixCachedTokens, 'the idle cache is in the total');

  const sized = await post(`${w.url}/v1/chat/completions`, chat('first question'), {
    'x-sim-prompt-tokens': '700',
  });
  assert.equal(sized.status, 200);
  assert.equal(w.stats().prefixHitTokens, s.prefixHitTokens, 'no hit for a size-headed request');
});

test('vLLM-format workers report prefix_cache_queries/hits counters and whether caching is on', async (t) => {
  const on = await startWorker(t, { loadFormat: 'vllm', name: 'on' }, 1);
  const off = await startWorker(t, { loadFormat: 'vllm', name: 'off', prefixCache: { enabled: false } }, 1);
  for (const w of [on, off]) {
    for (const q of ['a', 'b'])
      assert.equal((await post(`${w.url}/v1/chat/completions`, chat(q))).status, 200);
  }
  const read = async (url: string) => {
    const text = (await get(`${url}/metrics`)).body;
    const value = (name: string) =>
      Number(new RegExp(`^${name}\\{engine="0"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1]);
    assert.match(text, /^# TYPE vllm:prefix_cache_queries_total counter$/m);
    assert.match(text, /^# TYPE vllm:prefix_cache_hits_total counter$/m);
    return {
      queries: value('vllm:prefix_cache_queries_total'),
      hits: value('vllm:prefix_cache_hits_total'),
      enabled: /enable_prefix_caching="True"/.test(text),
    };
  };
  const a = await read(on.url);
  assert.deepEqual(a, {
    queries: on.stats().prefixQueryTokens,
    hits: on.stats().prefixHitTokens,
    enabled: true,
  });
  assert.ok(a.hits > 0);
  assert.deepEqual(await read(off.url), { queries: 0, hits: 0, enabled: false });
  assert.equal(off.stats().prefixCachedTokens, 0);
});
