import { type Rng, seededRng } from '../core/random.js';
import { estimateFleetCapacity } from './capacity.js';
import type { EngineParams } from './engine-params.js';
import { tokensText } from './openai-format.js';
import { CHARS_PER_TOKEN, estimatePromptTokens } from './tokens.js';
import {
  CHAT_OUTPUT,
  type ChatMessage,
  type LengthDistribution,
  sampleContinuous,
  sampleLength,
  type WorkloadItem,
} from './workload.js';

/**
 * Multi-turn chat, the traffic prefix caching exists for. Sessions arrive as a Poisson process; each
 * has 2 to 8 turns and one of a handful of system prompts shared by every session. Turn k sends the
 * system prompt, every earlier user message and assistant reply, and the new user message, so each
 * request's prompt starts with the whole previous request's prompt.
 *
 * The schedule is open-loop: turn k+1 is sent a seeded think time after turn k was sent, whatever
 * happened to turn k's response. A real user waits for the reply, so under overload real traffic
 * would slow down; holding the schedule fixed gives every policy the same offered load, which is
 * what a comparison needs. The assistant messages carry exactly the text the simulator streams back
 * for a reply of that length (its replies are deterministic), as a real client would echo them.
 *
 * Everything about session i (turns, sizes, text, think times) comes from its own seeded stream, so
 * a seed gives the same conversations at any rate; only the session start times depend on it.
 */

export interface ConversationOptions {
  seed: number;
  /** Mean session arrival rate, sessions per model second. */
  sessionsPerSec: number;
  /** Sessions start within [0, durationSec); their later turns may run past it. */
  durationSec: number;
  /** Turns per session, uniform in [min, max] (default 2..8). */
  turns?: { min: number; max: number };
  /** Distinct system prompts, each session picks one uniformly (default 4). */
  systemPrompts?: number;
  systemTokens?: LengthDistribution;
  userTokens?: LengthDistribution;
  outputTokens?: LengthDistribution;
  /** Seconds between one turn's send and the next; a LengthDistribution in seconds. */
  thinkTimeSec?: LengthDistribution;
  /** A session ends early rather than send a turn whose prompt + reply would exceed this (default 8192). */
  maxContextTokens?: number;
}

export interface ConversationItem extends WorkloadItem {
  messages: readonly ChatMessage[];
  sessionId: string;
  /** 1-based turn within the session. */
  turn: number;
}

export const CONVERSATION_DEFAULTS = Object.freeze({
  turns: Object.freeze({ min: 2, max: 8 }),
  systemPrompts: 4,
  systemTokens: Object.freeze({ median: 500, sigma: 0.3, min: 200, max: 1000 }),
  userTokens: Object.freeze({ median: 80, sigma: 0.9, min: 8, max: 1000 }),
  outputTokens: CHAT_OUTPUT,
  thinkTimeSec: Object.freeze({ median: 4, sigma: 0.6, min: 1, max: 30 }),
  maxContextTokens: 8192,
});

/** Mean turns per session before the context cap (the cap only ever shortens sessions). */
export function meanTurns(o: Pick<ConversationOptions, 'turns'> = {}): number {
  const t = o.turns ?? CONVERSATION_DEFAULTS.turns;
  return (t.min + t.max) / 2;
}

const WORD_CHARS = 'abcdefghijklmnopqrstuvwxyz';

/** Seeded lower-case words, exactly `tokens` tokens by the 4-characters rule. */
export function randomText(rng: Rng, tokens: number): string {
  const chars = Math.max(0, Math.floor(tokens)) * CHARS_PER_TOKEN;
  let s = '';
  while (s.length < chars) {
    const len = 2 + Math.floor(rng() * 7);
    for (let i = 0; i < len; i++) s += WORD_CHARS[Math.floor(rng() * WORD_CHARS.length)];
    s += ' ';
  }
  return s.slice(0, chars);
}

/** A stream per (seed, lane, index): session i's content must not depend on how many came before. */
function streamFor(seed: number, lane: number, index: number): Rng {
  return seededRng(
    (Math.imul(seed + 1, 0x9e3779b1) ^ Math.imul(lane, 0x85ebca6b) ^ (index * 0xc2b2ae35)) >>> 0,
  );
}

/** The system prompts shared by all sessions of a seed. */
export function systemPrompts(
  o: Pick<ConversationOptions, 'seed' | 'systemPrompts' | 'systemTokens'>,
): string[] {
  const n = o.systemPrompts ?? CONVERSATION_DEFAULTS.systemPrompts;
  const dist = o.systemTokens ?? CONVERSATION_DEFAULTS.systemTokens;
  return Array.from({ length: n }, (_, i) => {
    const rng = streamFor(o.seed, 1, i);
    return `You are assistant ${i}. ${randomText(rng, sampleLength(rng, dist))}`;
  });
}

/** Seeded multi-turn conversations as a workload, sorted by send time, `index` in that order. */
export function createConversations(o: ConversationOptions): ConversationItem[] {
  if (!(o.sessionsPerSec > 0)) throw new RangeError(`sessionsPerSec must be > 0, got ${o.sessionsPerSec}`);
  if (!(o.durationSec > 0)) throw new RangeError(`durationSec must be > 0, got ${o.durationSec}`);
  const turns = o.turns ?? CONVERSATION_DEFAULTS.turns;
  if (!(
    Number.isInteger(turns.min) &&
    turns.min >= 1 &&
    Number.isInteger(turns.max) &&
    turns.max >= turns.min
  )) {
    throw new RangeError(`turns must be integers with 1 <= min <= max, got ${turns.min}..${turns.max}`);
  }
  const systems = systemPrompts(o);
  const user = o.userTokens ?? CONVERSATION_DEFAULTS.userTokens;
  const output = o.outputTokens ?? CONVERSATION_DEFAULTS.outputTokens;
  const think = o.thinkTimeSec ?? CONVERSATION_DEFAULTS.thinkTimeSec;
  const maxContext = o.maxContextTokens ?? CONVERSATION_DEFAULTS.maxContextTokens;
  const gaps = streamFor(o.seed, 2, 0);
  const end = o.durationSec * 1000;
  const items: ConversationItem[] = [];
  let start = 0;
  for (let session = 0; ; session++) {
    start += (-Math.log(1 - gaps()) / o.sessionsPerSec) * 1000;
    if (start >= end) break;
    const rng = streamFor(o.seed, 3, session);
    const count = turns.min + Math.floor(rng() * (turns.max - turns.min + 1));
    const system = systems[Math.floor(rng() * systems.length)]!;
    const sessionId = `session-${o.seed}-${session}`;
    let history: ChatMessage[] = [{ role: 'system', content: system }];
    let at = start;
    for (let turn = 1; turn <= count; turn++) {
      if (turn > 1) at += sampleContinuous(rng, think) * 1000;
      const messages = [
        ...history,
        { role: 'user' as const, content: randomText(rng, sampleLength(rng, user)) },
      ];
      const maxTokens = sampleLength(rng, output);
      const promptTokens = estimatePromptTokens({ messages });
      if (promptTokens + maxTokens > maxContext) break;
      items.push({ index: 0, at, promptTokens, maxTokens, messages, sessionId, turn });
      history = [...messages, { role: 'assistant', content: tokensText(1, maxTokens) }];
    }
  }
  items.sort((a, b) => a.at - b.at);
  items.forEach((item, i) => (item.index = i));
  return items;
}

/**
 * Saturation throughput (requests/s) of `workers` for this conversation mix with no prefix cache:
 * the yardstick a benchmark's load is a fraction of. Caching lifts the real capacity above it, by
 * how much depends on the routing, which is what the benchmark measures.
 */
export function conversationCapacity(
  workers: readonly (Partial<EngineParams> & { name: string; dpRanks?: number })[],
  o: Omit<ConversationOptions, 'sessionsPerSec' | 'durationSec'>,
): number {
  const sample = createConversations({ ...o, sessionsPerSec: 5, durationSec: 300 });
  return estimateFleetCapacity(workers, () => (i) => {
    const item = sample[i % sample.length]!;
    return { promptTokens: item.promptTokens, maxTokens: item.maxTokens };
  }).requestsPerSec;
}
