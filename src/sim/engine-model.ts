import { type EngineParams, resolveEngineParams } from './engine-params.js';
import { SimRequestError } from './errors.js';
import {
  type CacheBlock,
  PrefixCache,
  type PrefixCacheOptions,
  resolvePrefixCacheOptions,
} from './prefix-cache.js';

/**
 * A continuous-batching LLM engine reduced to its queueing behaviour, with no I/O and no clock of
 * its own: the caller passes `now` (model milliseconds) to every call, so the same code runs on a
 * virtual clock in tests and on the real clock (scaled) behind the HTTP server.
 *
 * One step is `beginStep(now)` (schedule, returns its duration) then `endStep(now + duration)`
 * (tokens come out). Scheduling, in the order vLLM's chunked-prefill scheduler uses:
 * 1. Decodes first. Every running sequence that has finished its prefill needs one more KV slot for
 *    the token it is about to generate; oldest first. When the cache is full the youngest running
 *    request (latest arrival) is preempted: all its KV is freed and it goes back to the head of the
 *    queue. Readmitted, it must recompute prompt + already-generated tokens (vLLM's recompute
 *    preemption; SGLang's retraction behaves the same way).
 * 2. Running requests still prefilling get chunks of the remaining step token budget, oldest first.
 * 3. The waiting queue is admitted strictly FCFS (head-of-line blocking, as both engines do) while
 *    there is step budget, the batch is below `maxBatchSize`, and the head's whole prompt fits in
 *    free KV above a small watermark. Admission reserves the prompt's KV at once (SGLang style), so
 *    KV usage is what a poller would see right after the request was accepted.
 *
 * Step time = decodeStepBaseMs + decodePerSeqMs x decoding sequences + prefill tokens / prefill
 * rate. So prefill competes with decode inside a step (every running stream stalls while a long
 * prompt is chunked in), and a decode step slows as the batch grows. A request's first token comes
 * out at the end of the step that completes its prefill; TTFT is measured from arrival here.
 *
 * Prefix cache (see prefix-cache.ts; on by default, as in vLLM V1 and SGLang): a request that comes
 * with `prefixKeys` (the chained block keys of its prompt text) skips the prefill of its longest
 * cached prefix on admission, and the blocks of its prompt join the cache as soon as a prefill chunk
 * has computed them. Cached blocks held by running requests are their KV, shared and counted once;
 * idle cached blocks sit in free KV and are evicted (least recently released first) whenever
 * admission, decode growth or the cache's token budget needs the room, before anyone is preempted.
 * So `kvTokens` / `kvUsage` count only KV that running requests reference, as vLLM's
 * kv_cache_usage_perc and SGLang's token_usage do, and return to 0 when the engine is idle. At least
 * one prompt token is always computed (a whole-prompt hit recomputes its last block). Only prompt
 * blocks are cached, not generated ones (vLLM and SGLang also keep the reply), so a follow-up turn
 * recomputes the previous reply: the cache's benefit is if anything understated. Requests without
 * keys behave exactly as with no cache.
 *
 * Assumptions and simplifications, each chosen to keep the model honest about what a load balancer
 * can influence (queueing, KV pressure, batch slowdown, preemption) rather than GPU detail:
 * - KV is counted in tokens, not blocks (no block-rounding waste); only the prefix cache works in
 *   whole blocks.
 * - `waitingTokens` counts whole prompts: the engine learns a waiting request's cache hit only when
 *   it is admitted.
 * - Step cost is linear in batch size and prefill tokens; attention cost growing with context
 *   length is ignored (it would make long requests slower still, favouring KV-aware policies).
 * - The scheduler does not reserve KV for future output (no SGLang new_token_ratio): growth is
 *   handled only by preemption, which makes overload visible as preemptions.
 * - Output length is given per request (`outputTokens`, default `maxTokens`), as if the model hit
 *   its stop token there.
 */

export type FinishReason = 'length' | 'stop' | 'abort';

export interface SubmitSpec {
  promptTokens: number;
  maxTokens: number;
  /** Tokens the "model" will actually produce before stopping; defaults to maxTokens. */
  outputTokens?: number;
  /**
   * Chained keys of the prompt's full blocks (`blockKeys` of its text), for the prefix cache; keys
   * beyond promptTokens / blockTokens are ignored. Without them the request never hits the cache.
   */
  prefixKeys?: readonly number[];
}

export interface RequestSink {
  /** One token came out; `generated` counts every token so far (recomputation repeats none). */
  onToken?(generated: number, now: number): void;
  onFinish?(reason: FinishReason, now: number): void;
}

export type RequestPhase = 'waiting' | 'running' | 'finished' | 'aborted';

/** What a submitter holds: timings for its own bookkeeping and `abort()` for client disconnects. */
export interface RequestHandle {
  readonly id: number;
  readonly phase: RequestPhase;
  readonly arrivalMs: number;
  readonly firstTokenMs: number | undefined;
  readonly finishedMs: number | undefined;
  readonly generated: number;
  readonly preemptions: number;
  /** Drops the request wherever it is and frees its KV; no sink callback. Idempotent. */
  abort(): void;
}

/** True state of the engine at this instant (what an oracle policy reads). */
export interface EngineState {
  kvTokens: number;
  kvCapacityTokens: number;
  kvUsage: number;
  running: number;
  waiting: number;
  /** Tokens the waiting queue must compute on admission (prompts plus recomputation). */
  waitingTokens: number;
  /** Prompt tokens of running requests not yet prefilled. */
  prefillBacklogTokens: number;
}

export interface EngineCounters {
  submitted: number;
  served: number;
  aborted: number;
  preemptions: number;
  promptTokens: number;
  generatedTokens: number;
  /** KV tokens thrown away by preemption (work that must be recomputed). */
  recomputedTokens: number;
  peakKvTokens: number;
  steps: number;
  /** Model ms spent inside steps. */
  busyMs: number;
  /** Tokens looked up in the prefix cache at admission (vLLM's prefix_cache_queries); 0 with no cache. */
  prefixQueryTokens: number;
  /** Of those, tokens found cached and not computed (vLLM's prefix_cache_hits). */
  prefixHitTokens: number;
}

class SimRequest implements RequestHandle {
  phase: RequestPhase = 'waiting';
  firstTokenMs: number | undefined;
  finishedMs: number | undefined;
  generated = 0;
  preemptions = 0;
  kv = 0;
  toPrefill = 0;
  stepPrefill = 0;
  stepDecode = false;
  /** Cache blocks this request references (hits, then its own inserted prompt blocks). */
  blocks: CacheBlock[] = [];
  /** Prompt blocks already looked up or offered to the cache since admission. */
  keyCursor = 0;
  /** Tokens of the sequence in KV since admission, cached or computed. */
  prefilled = 0;

  constructor(
    readonly id: number,
    readonly arrivalMs: number,
    readonly promptTokens: number,
    readonly outputTokens: number,
    readonly finishReason: 'length' | 'stop',
    readonly sink: RequestSink,
    private readonly engine: EngineModel,
    readonly keys: readonly number[],
  ) {}

  abort(): void {
    this.engine.abort(this);
  }
}

/** SGLang reports throughput over its last logging window and holds it while idle; so do we. */
const THROUGHPUT_WINDOW_MS = 1000;

export class EngineModel {
  readonly params: EngineParams;
  readonly counters: EngineCounters = {
    submitted: 0,
    served: 0,
    aborted: 0,
    preemptions: 0,
    promptTokens: 0,
    generatedTokens: 0,
    recomputedTokens: 0,
    peakKvTokens: 0,
    steps: 0,
    busyMs: 0,
    prefixQueryTokens: 0,
    prefixHitTokens: 0,
  };
  /** The rank's prefix cache; undefined when disabled. */
  readonly prefixCache: PrefixCache | undefined;

  #nextId = 1;
  /** KV referenced by running requests: their private tokens plus referenced cache blocks, once each. */
  #kvUsed = 0;
  /** Sorted by arrival (oldest first), so the youngest, the preemption victim, is last. */
  readonly #running: SimRequest[] = [];
  readonly #waiting: SimRequest[] = [];
  #waitingTokens = 0;
  #plan: SimRequest[] = [];
  #stepStart: number | undefined;
  #genThroughput = 0;
  #windowStart: number | undefined;
  #windowTokens = 0;

  constructor(params: Partial<EngineParams> = {}, prefixCache?: PrefixCacheOptions) {
    this.params = resolveEngineParams(params);
    const cache = resolvePrefixCacheOptions(prefixCache, this.params.kvCapacityTokens);
    this.prefixCache = cache.enabled ? new PrefixCache(cache.blockTokens, cache.maxTokens) : undefined;
  }

  /** Queues a request that arrived at `now`. Throws SimRequestError if it can never fit. */
  submit(spec: SubmitSpec, sink: RequestSink, now: number): RequestHandle {
    const prompt = Math.floor(spec.promptTokens);
    const max = Math.floor(spec.maxTokens);
    if (!(prompt >= 1)) throw new SimRequestError(`prompt must have at least 1 token, got ${prompt}`);
    if (!(max >= 1)) throw new SimRequestError(`max_tokens must be at least 1, got ${spec.maxTokens}`);
    if (prompt + max > this.params.maxModelLen) {
      throw new SimRequestError(
        `prompt (${prompt} tokens) + max_tokens (${max}) exceeds the maximum context length ${this.params.maxModelLen}`,
      );
    }
    const out = Math.max(1, Math.min(max, Math.floor(spec.outputTokens ?? max)));
    const cache = this.prefixCache;
    const keys =
      cache && spec.prefixKeys && spec.prefixKeys.length > 0
        ? spec.prefixKeys.slice(0, Math.floor(prompt / cache.blockTokens))
        : NO_KEYS;
    const req = new SimRequest(
      this.#nextId++,
      now,
      prompt,
      out,
      out < max ? 'stop' : 'length',
      sink,
      this,
      keys,
    );
    this.#waiting.push(req);
    this.#waitingTokens += prompt;
    this.counters.submitted++;
    return req;
  }

  /** True when a step is planned and not yet ended. */
  get inStep(): boolean {
    return this.#stepStart !== undefined;
  }

  /** True when there is nothing to run and nothing waiting. */
  get idle(): boolean {
    return this.#running.length === 0 && this.#waiting.length === 0;
  }

  /**
   * Schedules one step starting at `now` and returns its duration in ms, or undefined when there is
   * nothing to do. Must be followed by `endStep` before the next `beginStep`.
   */
  beginStep(now: number): number | undefined {
    if (this.#stepStart !== undefined) throw new Error('beginStep called twice without endStep');
    const p = this.params;
    const plan: SimRequest[] = [];
    let budget = p.maxBatchTokens;
    let decodes = 0;
    let prefillTokens = 0;

    // 1. Decodes, oldest first; a full cache preempts from the young end (possibly r itself).
    for (let i = 0; i < this.#running.length; i++) {
      const r = this.#running[i]!;
      if (r.toPrefill > 0) continue;
      while (!this.#makeRoom(1)) this.#preempt(this.#running[this.#running.length - 1]!);
      if (r.phase !== 'running') break; // r was the youngest and got preempted: nothing after it
      r.kv += 1;
      this.#kvUsed += 1;
      r.stepDecode = true;
      r.stepPrefill = 0;
      budget -= 1;
      decodes++;
      plan.push(r);
    }

    // 2. Continue chunked prefills, oldest first.
    for (const r of this.#running) {
      if (budget <= 0) break;
      if (r.toPrefill <= 0) continue;
      const chunk = Math.min(r.toPrefill, budget);
      r.stepPrefill = chunk;
      r.stepDecode = false;
      budget -= chunk;
      prefillTokens += chunk;
      plan.push(r);
    }

    // 3. Admit FCFS while the head's whole prompt (plus recomputation) fits. Its cached prefix
    //    needs no compute, and only the part of it that is idle now takes free KV.
    const reserve = Math.floor(p.admitWatermark * p.kvCapacityTokens);
    const cache = this.prefixCache;
    while (budget > 0 && this.#waiting.length > 0 && this.#running.length < p.maxBatchSize) {
      const head = this.#waiting[0]!;
      const need = head.promptTokens + head.generated;
      let hitBlocks = 0;
      let revived = 0;
      if (cache && head.keys.length > 0) {
        hitBlocks = cache.match(head.keys, Math.floor((need - 1) / cache.blockTokens));
        revived = cache.idleTokensAmong(head.keys, hitBlocks);
      }
      const hit = cache ? hitBlocks * cache.blockTokens : 0;
      const own = need - hit;
      // Idle cache blocks count as free: admission evicts them as needed.
      const free = p.kvCapacityTokens - this.#kvUsed;
      // An empty engine always takes its head: maxModelLen <= capacity guarantees it fits.
      if (this.#running.length > 0 && own + revived > free - reserve) break;
      this.#waiting.shift();
      this.#waitingTokens -= need;
      head.phase = 'running';
      if (cache) {
        cache.acquire(head.keys, hitBlocks, head.blocks);
        head.keyCursor = hitBlocks;
        head.prefilled = hit;
        this.counters.prefixQueryTokens += need;
        this.counters.prefixHitTokens += hit;
      }
      head.kv = own;
      head.toPrefill = own;
      this.#kvUsed += own + revived;
      this.#makeRoom(0);
      this.#insertRunning(head);
      const chunk = Math.min(own, budget);
      head.stepPrefill = chunk;
      head.stepDecode = false;
      budget -= chunk;
      prefillTokens += chunk;
      plan.push(head);
    }

    if (this.#kvUsed > this.counters.peakKvTokens) this.counters.peakKvTokens = this.#kvUsed;
    if (plan.length === 0) return undefined;
    this.#plan = plan;
    this.#stepStart = now;
    return p.decodeStepBaseMs + p.decodePerSeqMs * decodes + (prefillTokens * 1000) / p.prefillTokensPerSec;
  }

  /** Ends the planned step at `now`: prefill progress, one token per decode, finished requests leave. */
  endStep(now: number): void {
    if (this.#stepStart === undefined) throw new Error('endStep called without beginStep');
    this.counters.steps++;
    this.counters.busyMs += now - this.#stepStart;
    this.#stepStart = undefined;
    const plan = this.#plan;
    this.#plan = [];
    let tokens = 0;
    for (const r of plan) {
      if (r.phase !== 'running') continue; // aborted or preempted during the step
      if (r.stepPrefill > 0) {
        r.toPrefill -= r.stepPrefill;
        r.prefilled += r.stepPrefill;
        this.counters.promptTokens += r.stepPrefill;
        r.stepPrefill = 0;
        if (r.keyCursor < r.keys.length) this.#cachePrompt(r);
        if (r.toPrefill > 0) continue;
      } else if (!r.stepDecode) {
        continue;
      }
      r.stepDecode = false;
      r.generated++;
      tokens++;
      r.firstTokenMs ??= now;
      r.sink.onToken?.(r.generated, now);
      if (r.generated >= r.outputTokens && r.phase === 'running') this.#finish(r, now);
    }
    this.counters.generatedTokens += tokens;
    this.#trackThroughput(tokens, now);
  }

  /** Drops every request, calling each sink's onFinish('abort'): for shutting a server down. */
  abortAll(now: number): void {
    const all = [...this.#running, ...this.#waiting];
    for (const r of all) {
      this.abort(r);
      r.sink.onFinish?.('abort', now);
    }
  }

  /** @internal use `handle.abort()`. */
  abort(r: SimRequest): void {
    if (r.phase === 'finished' || r.phase === 'aborted') return;
    if (r.phase === 'waiting') {
      const i = this.#waiting.indexOf(r);
      if (i >= 0) this.#waiting.splice(i, 1);
      this.#waitingTokens -= r.promptTokens + r.generated;
    } else {
      this.#removeRunning(r);
    }
    r.phase = 'aborted';
    this.counters.aborted++;
  }

  state(): EngineState {
    let backlog = 0;
    for (const r of this.#running) backlog += r.toPrefill;
    return {
      kvTokens: this.#kvUsed,
      kvCapacityTokens: this.params.kvCapacityTokens,
      kvUsage: this.#kvUsed / this.params.kvCapacityTokens,
      running: this.#running.length,
      waiting: this.#waiting.length,
      waitingTokens: this.#waitingTokens,
      prefillBacklogTokens: backlog,
    };
  }

  /** Generated tokens per second over the last full window (model time); held while idle. */
  get genThroughput(): number {
    return this.#genThroughput;
  }

  /**
   * Makes `tokens` more KV available to running requests by evicting idle cache blocks if needed;
   * false when even that is not enough (the caller must preempt). Keeps referenced + idle KV within
   * capacity, the invariant every KV-growing path restores.
   */
  #makeRoom(tokens: number): boolean {
    const cap = this.params.kvCapacityTokens;
    const cache = this.prefixCache;
    const over = this.#kvUsed + tokens + (cache ? cache.idleTokens : 0) - cap;
    if (over > 0 && cache) cache.evict(over);
    return this.#kvUsed + tokens <= cap;
  }

  /** Offers the prompt blocks `r` has fully computed to the cache; inserted ones become shared KV. */
  #cachePrompt(r: SimRequest): void {
    const cache = this.prefixCache!;
    const done = Math.min(
      r.keys.length,
      Math.floor(Math.min(r.prefilled, r.promptTokens) / cache.blockTokens),
    );
    for (let k = r.keyCursor; k < done; k++) {
      const block = cache.insert(r.keys[k]!);
      if (block === undefined) continue;
      // The same tokens move from r's private KV to a referenced block: #kvUsed does not change.
      r.blocks.push(block);
      r.kv -= cache.blockTokens;
    }
    if (done > r.keyCursor) r.keyCursor = done;
  }

  #preempt(victim: SimRequest): void {
    this.counters.recomputedTokens += victim.kv;
    this.#removeRunning(victim);
    victim.phase = 'waiting';
    victim.preemptions++;
    victim.stepDecode = false;
    victim.stepPrefill = 0;
    victim.toPrefill = 0;
    victim.keyCursor = 0;
    victim.prefilled = 0;
    this.counters.preemptions++;
    const recompute = victim.promptTokens + victim.generated;
    this.#waiting.unshift(victim);
    this.#waitingTokens += recompute;
  }

  #finish(r: SimRequest, now: number): void {
    this.#removeRunning(r);
    r.phase = 'finished';
    r.finishedMs = now;
    this.counters.served++;
    r.sink.onFinish?.(r.finishReason, now);
  }

  #removeRunning(r: SimRequest): void {
    const i = this.#running.indexOf(r);
    if (i >= 0) this.#running.splice(i, 1);
    this.#kvUsed -= r.kv;
    r.kv = 0;
    if (r.blocks.length > 0) {
      // Blocks nobody else references turn idle: free KV that keeps its prefix for later requests.
      this.#kvUsed -= this.prefixCache!.release(r.blocks);
      r.blocks = [];
    }
  }

  #insertRunning(r: SimRequest): void {
    const list = this.#running;
    let i = list.length;
    while (i > 0 && older(r, list[i - 1]!)) i--;
    list.splice(i, 0, r);
  }

  #trackThroughput(tokens: number, now: number): void {
    if (this.#windowStart === undefined) this.#windowStart = now;
    this.#windowTokens += tokens;
    const span = now - this.#windowStart;
    if (span >= THROUGHPUT_WINDOW_MS) {
      this.#genThroughput = (this.#windowTokens * 1000) / span;
      this.#windowStart = now;
      this.#windowTokens = 0;
    }
  }
}

const NO_KEYS: readonly number[] = Object.freeze([]);

function older(a: SimRequest, b: SimRequest): boolean {
  return a.arrivalMs < b.arrivalMs || (a.arrivalMs === b.arrivalMs && a.id < b.id);
}
