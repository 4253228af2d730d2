import type { Worker } from '../../core/worker.js';
import { minMaxLowerIsBetter, type Scorer } from './scorer.js';

export const IN_FLIGHT_SCORER = 'in_flight';

/**
 * The router's own live in-flight count, min-max normalized. It moves on every pick, so it is the
 * one signal that spreads a burst arriving between two polls.
 */
export class InFlightScorer implements Scorer {
  readonly name = IN_FLIGHT_SCORER;
  #values = new Float64Array(16);

  score(candidates: readonly Worker[], _ctx: unknown, out: Float64Array): void {
    const n = candidates.length;
    if (this.#values.length < n) this.#values = new Float64Array(n * 2);
    for (let i = 0; i < n; i++) this.#values[i] = (candidates[i] as Worker).inFlight;
    minMaxLowerIsBetter(this.#values, n, out);
  }
}
