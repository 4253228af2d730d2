import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type ConversationItem,
  createConversations,
  meanTurns,
  systemPrompts,
} from '../../src/sim/conversation-workload.js';
import { buildRequest } from '../../src/sim/load-generator.js';
import { tokensText } from '../../src/sim/openai-format.js';
import { blockKeys } from '../../src/sim/prefix-cache.js';
import { estimatePromptTokens, promptText } from '../../src/sim/tokens.js';

const OPTIONS = { seed: 4, sessionsPerSec: 0.5, durationSec: 120 };

function bySession(items: readonly ConversationItem[]): Map<string, ConversationItem[]> {
  const sessions = new Map<string, ConversationItem[]>();
  for (const it of items) {
    const list = sessions.get(it.sessionId) ?? [];
    list.push(it);
    sessions.set(it.sessionId, list);
  }
  return sessions;
}

test('conversations are deterministic per seed, sorted by send time and indexed in that order', () => {
  const a = createConversations(OPTIONS);
  assert.deepEqual(createConversations(OPTIONS), a);
  assert.notDeepEqual(createConversations({ ...OPTIONS, seed: 5 }), a);
  assert.ok(a.every((it, i) => it.index === i && (i === 0 || it.at >= a[i - 1]!.at)));
  const sessions = bySession(a);
  // ~60 sessions of 2..8 turns, a few cut short by the context cap
  assert.ok(sessions.size > 40 && sessions.size < 85, `${sessions.size} sessions`);
  assert.ok(Math.abs(a.length / sessions.size - meanTurns()) < 1, `${a.length} requests`);
});

test('each turn resends the whole history plus a new user message; ids and turns are per session', () => {
  const items = createConversations(OPTIONS);
  const systems = systemPrompts(OPTIONS);
  assert.equal(systems.length, 4);
  const usedSystems = new Set<string>();
  for (const [id, turns] of bySession(items)) {
    assert.ok(turns.length >= 1 && turns.length <= 8);
    assert.ok(turns[0]!.at < OPTIONS.durationSec * 1000, 'sessions start within the duration');
    assert.deepEqual(
      turns.map((t) => t.turn),
      turns.map((_, i) => i + 1),
    );
    for (const [k, t] of turns.entries()) {
      assert.equal(t.sessionId, id);
      assert.equal(t.messages.length, 2 * k + 2, 'system + k exchanges + the new user message');
      assert.equal(t.messages[0]!.role, 'system');
      assert.ok(systems.includes(t.messages[0]!.content));
      usedSystems.add(t.messages[0]!.content);
      assert.equal(t.messages.at(-1)!.role, 'user');
      assert.equal(t.promptTokens, estimatePromptTokens({ messages: t.messages }));
      assert.ok(t.promptTokens + t.maxTokens <= 8192);
      if (k === 0) continue;
      const prev = turns[k - 1]!;
      assert.ok(t.at - prev.at >= 1000 && t.at - prev.at <= 30_000, 'think time 1..30 s, open-loop');
      assert.deepEqual(t.messages.slice(0, prev.messages.length), prev.messages, 'history is resent');
      assert.deepEqual(t.messages[prev.messages.length], {
        role: 'assistant',
        content: tokensText(1, prev.maxTokens),
      });
      assert.ok(t.promptTokens > prev.promptTokens);
      // What the simulated engine hashes: the previous prompt's blocks are this prompt's first blocks.
      const before = blockKeys(promptText({ messages: prev.messages })!);
      assert.deepEqual(blockKeys(promptText({ messages: t.messages })!).slice(0, before.length), before);
    }
  }
  assert.equal(usedSystems.size, 4, 'sessions share a handful of system prompts');
  const users = items.map((it) => it.messages.at(-1)!.content);
  assert.equal(new Set(users).size, users.length, 'user messages are unique');
});

test('session content does not depend on the arrival rate', () => {
  const slow = bySession(createConversations(OPTIONS));
  const fast = bySession(createConversations({ ...OPTIONS, sessionsPerSec: 2 }));
  for (const [id, turns] of slow) {
    const other = fast.get(id)!;
    // Offsets from the session start, to the microsecond (the start itself differs, so do float sums).
    const shape = (list: ConversationItem[]) =>
      list.map((t) => [t.messages, t.maxTokens, Math.round((t.at - list[0]!.at) * 1000)]);
    assert.deepEqual(shape(other), shape(turns));
  }
});

test('the load generator sends the real messages and the session id, and no size header', () => {
  const item = createConversations(OPTIONS).find((it) => it.turn === 3)!;
  const req = buildRequest(item, { target: '', workload: [] });
  assert.equal(req.path, '/v1/chat/completions');
  assert.deepEqual(req.body.messages, item.messages);
  assert.equal(req.headers['x-session-id'], item.sessionId);
  assert.equal(req.headers['x-sim-prompt-tokens'], undefined);
  assert.equal(estimatePromptTokens(JSON.parse(req.payload)), item.promptTokens);
  const plain = buildRequest(
    { index: 0, at: 0, promptTokens: 50, maxTokens: 5 },
    { target: '', workload: [] },
  );
  assert.equal(plain.headers['x-sim-prompt-tokens'], '50', 'filler prompts keep their size header');
  assert.equal(plain.headers['x-session-id'], undefined);
});

test('bad options are refused', () => {
  assert.throws(() => createConversations({ ...OPTIONS, sessionsPerSec: 0 }), RangeError);
  assert.throws(() => createConversations({ ...OPTIONS, durationSec: -1 }), RangeError);
  assert.throws(() => createConversations({ ...OPTIONS, turns: { min: 3, max: 2 } }), RangeError);
});
