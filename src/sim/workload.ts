import { type Rng, seededRng } from '../core/random.js';

/**
 * Seeded request streams for the load generator and the policy benchmark. Sizes and arrival gaps
 * come from separate random streams, so the same seed gives the same sequence of request sizes at
 * any rate: two runs at different loads differ only in timing.
 */

/** A lognormal length, clipped: long-tailed like real chat traffic (most short, a few huge). */
export interface LengthDistribution {
  /** Median length in tokens (e^mu). */
  median: number;
  /** Standard deviation of ln(length); ~1 gives a p99/p50 ratio of about 10. */
  sigma: number;
  min: number;
  max: number;
}

/**
 * Default mix, shaped after public chat traces (ShareGPT / LMSYS-Chat: prompts of a few hundred
 * tokens with a tail of pasted documents, answers of one to a few hundred tokens). Means are about
 * 640 prompt and 165 output tokens.
 */
export const CHAT_PROMPT: Readonly<LengthDistribution> = Object.freeze({
  median: 400,
  sigma: 1.0,
  min: 16,
  max: 6000,
});
export const CHAT_OUTPUT: Readonly<LengthDistribution> = Object.freeze({
  median: 120,
  sigma: 0.8,
  min: 8,
  max: 1024,
});

/** One OpenAI chat message, as a workload carries it. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface WorkloadItem {
  index: number;
  /** Scheduled send time from the start of the run, model ms. */
  at: number;
  promptTokens: number;
  /** Sent as max_tokens; the simulator generates exactly this many tokens. */
  maxTokens: number;
  /**
   * The real chat messages to send (conversation workloads). Absent: the load generator pads a
   * prompt of `promptTokens` with filler and names its size in a header.
   */
  messages?: readonly ChatMessage[];
  /** Sent as `x-session-id`, so session-affine policies can keep a conversation together. */
  sessionId?: string;
}

export interface WorkloadOptions {
  seed: number;
  /** Mean arrival rate, requests per second of model time. */
  ratePerSec: number;
  durationSec: number;
  prompt?: LengthDistribution;
  output?: LengthDistribution;
}

/** Standard normal from two uniforms (Box-Muller); 1 - u keeps log() away from 0. */
function normal(rng: Rng): number {
  const u = 1 - rng();
  const v = rng();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

export function sampleLength(rng: Rng, d: LengthDistribution): number {
  const x = Math.round(d.median * Math.exp(d.sigma * normal(rng)));
  return Math.min(d.max, Math.max(d.min, x));
}

/** The same lognormal, unrounded: for durations such as think times. */
export function sampleContinuous(rng: Rng, d: LengthDistribution): number {
  return Math.min(d.max, Math.max(d.min, d.median * Math.exp(d.sigma * normal(rng))));
}

/** A sampler of sizes alone, e.g. for the simulator's capacity estimate. */
export function sizeSampler(
  seed: number,
  prompt: LengthDistribution = CHAT_PROMPT,
  output: LengthDistribution = CHAT_OUTPUT,
): () => { promptTokens: number; maxTokens: number } {
  const rng = seededRng(seed);
  return () => ({ promptTokens: sampleLength(rng, prompt), maxTokens: sampleLength(rng, output) });
}

/** Open-loop Poisson arrivals (exponential gaps) over `durationSec`, with seeded sizes. */
export function createWorkload(options: WorkloadOptions): WorkloadItem[] {
  if (!(options.ratePerSec > 0)) throw new RangeError(`ratePerSec must be > 0, got ${options.ratePerSec}`);
  if (!(options.durationSec > 0)) throw new RangeError(`durationSec must be > 0, got ${options.durationSec}`);
  const sizes = sizeSampler(options.seed, options.prompt, options.output);
  const gaps = seededRng((options.seed ^ 0x9e3779b9) >>> 0);
  const end = options.durationSec * 1000;
  const items: WorkloadItem[] = [];
  let t = 0;
  for (;;) {
    t += (-Math.log(1 - gaps()) / options.ratePerSec) * 1000;
    if (t >= end) break;
    items.push({ index: items.length, at: t, ...sizes() });
  }
  return items;
}
