import type { EngineCounters, EngineModel, RequestHandle, SubmitSpec } from './engine-model.js';
import { SimRequestError } from './errors.js';

export interface VirtualArrival extends SubmitSpec {
  /** Arrival time, model ms. */
  at: number;
}

export interface VirtualRecord {
  index: number;
  arrivalMs: number;
  ttftMs: number | undefined;
  e2eMs: number | undefined;
  generated: number;
  preemptions: number;
  /** Set when the engine refused the request (too long for its context). */
  rejected?: string;
}

export interface VirtualRunResult {
  records: VirtualRecord[];
  /** Model time when the last step ended. */
  endMs: number;
  counters: EngineCounters;
}

export interface VirtualRunOptions {
  /** Called after every step, e.g. to sample state or abort a request mid-flight. */
  onStep?(now: number): void;
  /** Stop (leaving work unfinished) once model time passes this. */
  untilMs?: number;
}

/**
 * Drives a model on a virtual clock: jumps straight from step end to step end, so a minute of
 * engine time costs milliseconds and is exactly reproducible. Arrivals that land inside a step are
 * queued with their true arrival time and considered when the next step is scheduled, as on a
 * real engine.
 */
export function runVirtual(
  model: EngineModel,
  arrivals: readonly VirtualArrival[],
  options: VirtualRunOptions = {},
): VirtualRunResult {
  const order = arrivals.map((a, index) => ({ a, index })).sort((x, y) => x.a.at - y.a.at);
  const handles: (RequestHandle | undefined)[] = new Array(arrivals.length);
  const rejected: (string | undefined)[] = new Array(arrivals.length);
  const until = options.untilMs ?? Infinity;
  let t = 0;
  let next = 0;
  for (;;) {
    while (next < order.length && order[next]!.a.at <= t) {
      const { a, index } = order[next++]!;
      try {
        handles[index] = model.submit(a, {}, a.at);
      } catch (err) {
        if (!(err instanceof SimRequestError)) throw err;
        rejected[index] = err.message;
      }
    }
    if (t >= until) break;
    const d = model.beginStep(t);
    if (d === undefined) {
      if (next >= order.length) break;
      t = Math.max(t, order[next]!.a.at);
      continue;
    }
    t += d;
    model.endStep(t);
    options.onStep?.(t);
  }
  const records = arrivals.map((a, index): VirtualRecord => {
    const h = handles[index];
    const reason = rejected[index];
    return {
      index,
      arrivalMs: a.at,
      ttftMs: h?.firstTokenMs !== undefined ? h.firstTokenMs - a.at : undefined,
      e2eMs: h?.finishedMs !== undefined ? h.finishedMs - a.at : undefined,
      generated: h?.generated ?? 0,
      preemptions: h?.preemptions ?? 0,
      ...(reason !== undefined ? { rejected: reason } : {}),
    };
  });
  return { records, endMs: t, counters: { ...model.counters } };
}
