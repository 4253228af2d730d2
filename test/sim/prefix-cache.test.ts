import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import { createConversations, randomText } from '../../src/sim/conversation-workload.js';
import { EngineModel, type SubmitSpec } from '../../src/sim/engine-model.js';
import { blockKeys, PrefixCache } from '../../src/sim/prefix-cache.js';
import { ENGINE_CLASSES } from '../../src/sim/scenarios.js';
import { promptText } from '../../src/sim/tokens.js';
import { runVirtual } from '../../src/sim/virtual-run.js';
import { drain } from './sim-helpers.js';
import { createWorkload } from '../../src/sim/workload.js';

/** 1 ms per 10 prompt tokens, 10 ms per step: prefill times are easy to read off. */
const FAST = {
  kvCapacityTokens: 10_000,
  prefillTokensPerSec: 10_000,
  decodeStepBaseMs: 10,
  decodePerSeqMs: 1,
  maxBatchSize: 16,
  maxBatchTokens: 4096,
  admitWatermark: 0,
};

/** A request for `text`, sized at exactly its 4-chars-a-token length, with its block keys. */
function spec(text: string, maxTokens = 1): SubmitSpec {
  return { promptTokens: text.length / 4, maxTokens, prefixKeys: blockKeys(text) };
}

const text = (tokens: number, seed: number) => randomText(seededRng(seed), tokens);

test('block keys are chained: a changed block changes its key and every later one, nothing before', () => {
  const base = text(160, 1); // 10 blocks of 64 chars
  const keys = blockKeys(base);
  assert.equal(keys.length, 10);
  assert.deepEqual(blockKeys(base), keys, 'deterministic');
  assert.equal(new Set(keys).size, 10);
  assert.deepEqual(blockKeys(`${base}abc`), keys, 'a trailing partial block is not a block');
  assert.deepEqual(blockKeys(base, 4), keys.slice(0, 4));
  const changed = `${base.slice(0, 150)}#${base.slice(151)}`; // inside block 2 (chars 128..191)
  const k2 = blockKeys(changed);
  assert.deepEqual(k2.slice(0, 2), keys.slice(0, 2));
  for (let i = 2; i < 10; i++) assert.notEqual(k2[i], keys[i], `block ${i} differs`);
  // The same block text after a different history is a different key (the chain, not the block).
  const swapped = base.slice(64, 128) + base.slice(0, 64) + base.slice(128);
  assert.ok(blockKeys(swapped).every((k, i) => k !== keys[i]));
});

test("a repeated prompt's second request prefills only the new tail", () => {
  const m = new EngineModel(FAST);
  const head = text(1000, 2); // 62 full blocks = 992 tokens
  const a = m.submit(spec(head), {}, 0);
  const t1 = drain(m);
  assert.equal(a.firstTokenMs, 10 + 100, 'cold: the whole prompt is computed');
  assert.deepEqual([m.counters.prefixQueryTokens, m.counters.prefixHitTokens], [1000, 0]);
  assert.equal(m.state().kvTokens, 0, 'idle cache blocks are not KV in use');
  assert.equal(m.prefixCache!.cachedTokens, 992);

  const b = m.submit(spec(head + text(200, 3)), {}, t1);
  drain(m, t1);
  // 1200 tokens, 992 of them cached: 208 computed = 20.8 ms of prefill in one step.
  assert.ok(Math.abs(b.firstTokenMs! - t1 - 30.8) < 1e-9, `got ${b.firstTokenMs! - t1}`);
  assert.deepEqual([m.counters.prefixQueryTokens, m.counters.prefixHitTokens], [2200, 992]);
  assert.equal(m.counters.promptTokens, 1000 + 208, 'prompt tokens counts computed tokens only');

  // The very same prompt again: the last block is recomputed so one token is always computed.
  const exact = text(1024, 4); // exactly 64 blocks
  const c0 = m.submit(spec(exact), {}, 0);
  const t2 = drain(m, t1 + 1000);
  const hits = m.counters.prefixHitTokens;
  const c = m.submit(spec(exact), {}, t2);
  drain(m, t2);
  assert.equal(m.counters.prefixHitTokens - hits, 1008);
  assert.ok(c.firstTokenMs! - t2 < c0.firstTokenMs! - (t1 + 1000));
});

test('a changed early block invalidates the rest of the chain', () => {
  const m = new EngineModel(FAST);
  const base = text(800, 5);
  m.submit(spec(base), {}, 0);
  const t = drain(m);
  const changed = `${base.slice(0, 100)}X${base.slice(101)}`; // block 1 (chars 64..127)
  m.submit(spec(changed), {}, t);
  drain(m, t);
  assert.equal(m.counters.prefixHitTokens, 16, 'only block 0 still matches');
});

test('a prefix shared by running requests is KV once; idle blocks give way to new work', () => {
  const m = new EngineModel(FAST);
  const system = text(992, 6); // 62 blocks
  const a = m.submit(spec(system + text(8, 7), 50), {}, 0);
  let t = m.beginStep(0)!;
  m.endStep(t); // a is prefilled: 992 tokens now live in shared blocks, 8 private + 1 generated
  assert.equal(a.generated, 1);
  assert.equal(m.state().kvTokens, 1000);
  m.submit(spec(system + text(208, 8), 50), {}, t);
  const d = m.beginStep(t)!;
  // a decodes one more token, b reserves only its 208 uncached tokens
  assert.equal(m.state().kvTokens, 1000 + 1 + 208);
  t += d;
  m.endStep(t);
  drain(m, t);
  assert.equal(m.state().kvTokens, 0);
  assert.equal(m.prefixCache!.idleTokens, m.prefixCache!.cachedTokens, 'all cached blocks idle');

  // Idle blocks occupy free KV; admission evicts them instead of waiting or preempting.
  const small = new EngineModel({ ...FAST, kvCapacityTokens: 2000 });
  small.submit(spec(text(1600, 9)), {}, 0);
  const t0 = drain(small);
  assert.equal(small.prefixCache!.idleTokens, 1600);
  const big = small.submit(spec(text(1900, 10), 20), {}, t0);
  drain(small, t0, () => {
    const idle = small.prefixCache!.idleTokens;
    assert.ok(small.state().kvTokens + idle <= 2000, 'in use + idle never exceeds capacity');
  });
  assert.equal(big.preemptions, 0);
  assert.equal(big.phase, 'finished');
  assert.ok(small.prefixCache!.evictedTokens >= 1500);
});

test('LRU eviction keeps the token budget and drops the least recently released first', () => {
  const c = new PrefixCache(16, 64); // room for 4 blocks
  const held = [1, 2, 3, 4].map((k) => c.insert(k)!);
  assert.equal(c.insert(5), undefined, 'every block referenced: no room, nothing evicted');
  assert.equal(c.insert(1), undefined, 'already cached');
  c.release([held[0]!, held[1]!]); // releases 2 then 1: block 2 is older
  c.release([held[2]!]);
  assert.equal(c.idleTokens, 48);
  const five = c.insert(5)!;
  assert.ok(five);
  assert.deepEqual([c.has(2), c.has(1), c.has(3), c.has(5)], [false, true, true, true]);
  c.release([five]);
  c.acquire([3], 1, []); // a hit takes block 3 out of the idle list
  c.insert(6);
  assert.deepEqual([c.has(1), c.has(3), c.has(4), c.has(5), c.has(6)], [false, true, true, true, true]);
  assert.equal(c.cachedTokens, 64);
  assert.equal(c.evictedTokens, 32);

  // In the engine: many distinct prompts through a small budget.
  const m = new EngineModel(FAST, { maxTokens: 320 });
  const prompts = Array.from({ length: 12 }, (_, i) => text(96, 100 + i));
  let t = 0;
  for (const p of prompts) {
    m.submit(spec(p), {}, t);
    t = drain(m, t, () => assert.ok(m.prefixCache!.cachedTokens <= 320));
  }
  const hitsBefore = m.counters.prefixHitTokens;
  assert.equal(hitsBefore, 0);
  m.submit(spec(prompts.at(-1)!), {}, t); // the newest is still cached
  t = drain(m, t);
  assert.equal(m.counters.prefixHitTokens, 80);
  m.submit(spec(prompts[0]!), {}, t); // the oldest was evicted
  drain(m, t);
  assert.equal(m.counters.prefixHitTokens, 80);
});

test('requests without keys behave exactly as with the cache off', () => {
  const arrivals = createWorkload({ seed: 21, ratePerSec: 3, durationSec: 60 }).map((w) => ({
    at: w.at,
    promptTokens: w.promptTokens,
    maxTokens: w.maxTokens,
  }));
  const on = runVirtual(new EngineModel(ENGINE_CLASSES.a100), arrivals);
  const off = runVirtual(new EngineModel(ENGINE_CLASSES.a100, { enabled: false }), arrivals);
  assert.deepEqual(on.records, off.records);
  assert.deepEqual(on.counters, { ...off.counters, prefixQueryTokens: on.counters.prefixQueryTokens });
  assert.equal(on.counters.prefixHitTokens, 0);
  assert.ok(on.counters.preemptions > 0 || on.counters.peakKvTokens > 10_000, 'a loaded run');
});

test('conversations through a tight engine: KV invariants hold, every token comes out once', () => {
  const model = new EngineModel({ ...ENGINE_CLASSES.l40s, kvCapacityTokens: 9000, maxModelLen: 9000 });
  const items = createConversations({ seed: 8, sessionsPerSec: 0.6, durationSec: 90 });
  const arrivals = items.map((it) => ({
    at: it.at,
    promptTokens: it.promptTokens,
    maxTokens: it.maxTokens,
    prefixKeys: blockKeys(promptText({ messages: it.messages })!),
  }));
  const cache = model.prefixCache!;
  const { records, counters } = runVirtual(model, arrivals, {
    onStep: () => {
      const s = model.state();
      assert.ok(s.kvTokens >= 0 && s.kvTokens + cache.idleTokens <= s.kvCapacityTokens);
      assert.ok(cache.cachedTokens <= s.kvCapacityTokens);
    },
  });
  assert.equal(counters.served, items.length);
  assert.ok(counters.preemptions > 0, 'the run was tight enough to preempt');
  assert.ok(cache.evictedTokens > 0, 'and to evict');
  assert.equal(
    counters.generatedTokens,
    items.reduce((a, it) => a + it.maxTokens, 0),
  );
  assert.ok(records.every((r) => r.e2eMs! >= r.ttftMs!));
  assert.ok(counters.prefixHitTokens / counters.prefixQueryTokens > 0.5, 'one engine sees whole sessions');
  assert.equal(model.state().kvTokens, 0);
  assert.equal(cache.idleTokens, cache.cachedTokens);
});
