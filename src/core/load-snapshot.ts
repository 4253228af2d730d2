/**
 * The normalized load report every engine adapter maps into. A field the engine did not report is
 * `undefined`, never 0: "unknown" and "idle" must stay distinguishable for the policies.
 */
export interface RankLoad {
  rank: number;
  kvUsage?: number;
  running?: number;
  waiting?: number;
  waitingTokens?: number;
  throughput?: number;
  capacityTokens?: number;
}

export interface LoadSnapshot {
  /** Epoch milliseconds when the report was received. */
  at: number;
  /** KV-cache usage 0..1, mean over data-parallel ranks. */
  kvUsage?: number;
  running?: number;
  waiting?: number;
  /** Prompt tokens queued and not yet prefilled. */
  waitingTokens?: number;
  /** Generation throughput, tokens per second. */
  throughput?: number;
  /** KV capacity in tokens, summed over ranks. */
  capacityTokens?: number;
  ranks?: RankLoad[];
}

type RankField = Exclude<keyof RankLoad, 'rank'>;

const MEAN_FIELDS: readonly RankField[] = ['kvUsage'];
const SUM_FIELDS: readonly RankField[] = [
  'running',
  'waiting',
  'waitingTokens',
  'throughput',
  'capacityTokens',
];

/**
 * Folds per-rank loads into one snapshot: ratios are averaged, counts and capacities summed.
 * A field is reported only when at least one rank reported it.
 */
export function aggregateRanks(ranks: RankLoad[], at: number): LoadSnapshot {
  const snapshot: LoadSnapshot = { at, ranks };
  for (const field of MEAN_FIELDS) {
    const values = ranks.map((r) => r[field]).filter((v): v is number => v !== undefined);
    if (values.length > 0) snapshot[field] = values.reduce((a, b) => a + b, 0) / values.length;
  }
  for (const field of SUM_FIELDS) {
    const values = ranks.map((r) => r[field]).filter((v): v is number => v !== undefined);
    if (values.length > 0) snapshot[field] = values.reduce((a, b) => a + b, 0);
  }
  return snapshot;
}
