import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { PolicyInput } from '../../src/config/schema.js';
import { validateConfig } from '../../src/config/validate.js';
import { seededRng } from '../../src/core/random.js';
import { startProxyServer } from '../../src/express/standalone-proxy.js';
import { Router } from '../../src/router.js';
import { createConversations } from '../../src/sim/conversation-workload.js';
import { startFleet } from '../../src/sim/fleet.js';
import { runLoad } from '../../src/sim/load-generator.js';
import { TEST_WORKER } from './sim-helpers.js';

const SPEEDUP = 10;

/** A few seconds of short conversations with long turns, so history dominates the prompts. */
const workload = createConversations({
  seed: 12,
  sessionsPerSec: 2,
  durationSec: 5,
  turns: { min: 4, max: 6 },
  systemPrompts: 2,
  systemTokens: { median: 100, sigma: 0, min: 100, max: 100 },
  userTokens: { median: 150, sigma: 0.3, min: 50, max: 400 },
  outputTokens: { median: 40, sigma: 0.3, min: 10, max: 100 },
  thinkTimeSec: { median: 0.8, sigma: 0.3, min: 0.5, max: 2 },
});

/** Two identical workers behind the real router and Express proxy; returns the fleet's cache hit ratio. */
async function hitRatio(t: TestContext, policy: PolicyInput): Promise<number> {
  const fleet = await startFleet(
    [
      { ...TEST_WORKER, name: 'w-a' },
      { ...TEST_WORKER, name: 'w-b', loadFormat: 'vllm' },
    ],
    { speedup: SPEEDUP },
  );
  t.after(() => fleet.close());
  const config = validateConfig({
    workers: fleet.urls.map((url) => ({ url })),
    policy,
    host: '127.0.0.1',
    poller: { intervalSecs: 0.5 / SPEEDUP, timeoutMs: 200 },
  });
  const router = new Router(config, { rng: seededRng(3) });
  await router.start();
  t.after(() => router.stop());
  const proxy = await startProxyServer(router, { port: 0, host: '127.0.0.1' });
  t.after(() => proxy.close());
  const { summary } = await runLoad({
    target: `http://127.0.0.1:${proxy.port}`,
    workload,
    timeScale: SPEEDUP,
  });
  assert.equal(summary.errors, 0, JSON.stringify(summary.errorKinds));
  assert.equal(summary.requests, workload.length);
  const stats = fleet.workers.map((w) => w.stats());
  const hits = stats.reduce((a, s) => a + s.prefixHitTokens, 0);
  const queries = stats.reduce((a, s) => a + s.prefixQueryTokens, 0);
  assert.ok(queries >= workload.reduce((a, it) => a + it.promptTokens, 0), 'every prompt was looked up');
  return hits / queries;
}

test('smoke: cache_aware keeps conversations on their worker and hits the cache more than round_robin', async (t) => {
  assert.ok(workload.length >= 15, `${workload.length} requests`);
  const roundRobin = await hitRatio(t, 'round_robin');
  const cacheAware = await hitRatio(t, 'cache_aware');
  assert.ok(
    cacheAware > roundRobin + 0.1,
    `cache hit ratio: cache_aware ${cacheAware.toFixed(3)}, round_robin ${roundRobin.toFixed(3)}`,
  );
});
