import { type EngineParams, resolveEngineParams } from './engine-params.js';
import { SimRequestError } from './errors.js';

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
 * Assumptions and simplifications, each chosen to keep the model honest about what a load balancer
 * can influence (queueing, KV pressure, batch slowdown, preemption) rather than GPU detail:
 * - No prefix cache: every prompt is fully computed (cache-aware routing gets no credit here).
 * - KV is counted in tokens, not blocks (no block-rounding waste).
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

  constructor(
    readonly id: number,
    readonly arrivalMs: number,
    readonly promptTokens: number,
    readonly outputTokens: number,
    readonly finishReason: 'length' | 'stop',
    readonly sink: RequestSink,
    private readonly engine: EngineModel,
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
  };

  #nextId = 1;
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

  constructor(params: Partial<EngineParams> = {}) {
    this.params = resolveEngineParams(params);
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
    const req = new SimRequest(this.#nextId++, now, prompt, out, out < max ? 'stop' : 'length', sink, this);
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
      while (this.#kvUsed + 1 > p.kvCapacityTokens) this.#preempt(this.#running[this.#running.length - 1]!);
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

    // 3. Admit FCFS while the head's whole prompt (plus recomputation) fits.
    const reserve = Math.floor(p.admitWatermark * p.kvCapacityTokens);
    while (budget > 0 && this.#waiting.length > 0 && this.#running.length < p.maxBatchSize) {
      const head = this.#waiting[0]!;
      const need = head.promptTokens + head.generated;
      const free = p.kvCapacityTokens - this.#kvUsed;
      // An empty engine always takes its head: maxModelLen <= capacity guarantees it fits.
      if (this.#running.length > 0 && need > free - reserve) break;
      this.#waiting.shift();
      this.#waitingTokens -= need;
      head.phase = 'running';
      head.kv = need;
      head.toPrefill = need;
      this.#kvUsed += need;
      this.#insertRunning(head);
      const chunk = Math.min(need, budget);
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
        this.counters.promptTokens += r.stepPrefill;
        r.stepPrefill = 0;
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

  #preempt(victim: SimRequest): void {
    this.counters.recomputedTokens += victim.kv;
    this.#removeRunning(victim);
    victim.phase = 'waiting';
    victim.preemptions++;
    victim.stepDecode = false;
    victim.stepPrefill = 0;
    victim.toPrefill = 0;
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

function older(a: SimRequest, b: SimRequest): boolean {
  return a.arrivalMs < b.arrivalMs || (a.arrivalMs === b.arrivalMs && a.id < b.id);
}
