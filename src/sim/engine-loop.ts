import { performance } from 'node:perf_hooks';
import type { EngineModel, RequestHandle, RequestSink, SubmitSpec } from './engine-model.js';
import { SimConfigError } from './errors.js';

export interface EngineLoopOptions {
  /**
   * Time compression: model time runs this many times faster than wall time, so a benchmark can
   * play a 60 s scenario in 15 s with speedup 4. Every duration the model produces is divided by it;
   * callers measuring latency multiply by it to get model ms.
   */
  speedup?: number;
  /**
   * How far (wall ms) the loop may fall behind its ideal timeline and still catch up by running
   * steps back to back. Beyond it the debt is dropped (counted in `resyncs`): an overloaded machine
   * then makes the simulated engine slower instead of bursty.
   */
  maxLagMs?: number;
}

/**
 * Runs an EngineModel on the real clock. Steps follow an ideal timeline (each starts exactly when
 * the previous one ended in model time) and timers aim at that timeline, so timer lateness does not
 * accumulate into a slower engine; only sustained overload beyond `maxLagMs` does.
 */
export class EngineLoop {
  readonly model: EngineModel;
  readonly speedup: number;
  readonly #maxLagModelMs: number;
  readonly #t0 = performance.now();
  /** Model time at which the step in flight ends (the ideal timeline). */
  #stepEnd = 0;
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  #stopped = false;
  /** Times the loop fell more than maxLagMs behind and skipped ahead. */
  resyncs = 0;
  /** Worst wall-clock lag seen behind the ideal timeline, ms. */
  maxLagMs = 0;

  constructor(model: EngineModel, options: EngineLoopOptions = {}) {
    const speedup = options.speedup ?? 1;
    if (!(Number.isFinite(speedup) && speedup > 0)) {
      throw new SimConfigError(`speedup must be finite and > 0, got ${speedup}`);
    }
    this.model = model;
    this.speedup = speedup;
    this.#maxLagModelMs = (options.maxLagMs ?? 25) * speedup;
  }

  /** Current model time, ms since the loop was created. */
  now(): number {
    return (performance.now() - this.#t0) * this.speedup;
  }

  /** Queues a request arriving now; throws SimRequestError if the engine can never serve it. */
  submit(spec: SubmitSpec, sink: RequestSink): RequestHandle {
    if (this.#stopped) throw new Error('engine loop is stopped');
    const handle = this.model.submit(spec, sink, this.now());
    // Several requests arriving in the same tick join the same first step.
    if (this.#timer === undefined && this.#immediate === undefined)
      this.#immediate = setImmediate(this.#tick);
    return handle;
  }

  /** Stops stepping and ends every request with reason 'abort'. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#clear();
    if (this.model.inStep) this.model.endStep(this.#stepEnd);
    this.model.abortAll(this.now());
  }

  readonly #tick = (): void => {
    this.#timer = undefined;
    this.#immediate = undefined;
    if (this.#stopped) return;
    const real = this.now();
    let start: number;
    if (this.model.inStep) {
      this.model.endStep(this.#stepEnd);
      start = this.#stepEnd;
      const lag = real - start;
      if (lag > this.maxLagMs * this.speedup) this.maxLagMs = lag / this.speedup;
      if (lag > this.#maxLagModelMs) {
        this.resyncs++;
        start = real;
      }
    } else {
      start = real; // idle until now: the timeline restarts at the present
    }
    const duration = this.model.beginStep(start);
    if (duration === undefined) return; // idle; the next submit restarts the loop
    this.#stepEnd = start + duration;
    const wait = (this.#stepEnd - this.now()) / this.speedup;
    if (wait >= 1) this.#timer = setTimeout(this.#tick, wait);
    else this.#immediate = setImmediate(this.#tick);
  };

  #clear(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#timer = undefined;
    this.#immediate = undefined;
  }
}
