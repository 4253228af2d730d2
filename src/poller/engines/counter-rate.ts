/**
 * Turns monotonic counters (per data-parallel rank) into per-second rates between two polls, for
 * engines that export a tokens-generated counter instead of a throughput gauge.
 */
export class CounterRate {
  #previous: ReadonlyMap<string, number> | undefined;
  #previousAt = 0;

  /**
   * Records `values` taken at `at` (epoch ms) and returns each rank's increase per second since the
   * last call. Undefined on the first call, when the clock did not advance, or when any counter
   * went down: the server restarted, and that interval's delta means nothing.
   */
  update(values: ReadonlyMap<string, number>, at: number): Map<string, number> | undefined {
    const previous = this.#previous;
    const previousAt = this.#previousAt;
    this.#previous = values;
    this.#previousAt = at;
    if (previous === undefined || at <= previousAt) return undefined;
    const seconds = (at - previousAt) / 1000;
    const rates = new Map<string, number>();
    for (const [key, value] of values) {
      const before = previous.get(key);
      if (before === undefined) continue;
      if (value < before) return undefined;
      rates.set(key, (value - before) / seconds);
    }
    return rates;
  }
}
