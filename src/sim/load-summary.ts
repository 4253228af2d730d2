/** Plain per-request results of a load run and their summary; JSON-serializable as they are. */

export interface LoadRecord {
  index: number;
  /** Scheduled send time from the run start, model ms. */
  scheduledMs: number;
  /** How late the request actually left (generator or target-picker lag), model ms. */
  sendLagMs: number;
  promptTokens: number;
  maxTokens: number;
  /** Base URL the request was sent to. */
  target: string | undefined;
  /** `x-sim-worker` of the response, when the server is a simulator. */
  worker: string | undefined;
  status: number | undefined;
  ok: boolean;
  /** Short failure class: `http_503`, `ECONNREFUSED`, `timeout`, `truncated`, `pick_failed`... */
  error: string | undefined;
  /** Send to first SSE data chunk, model ms. */
  ttftMs: number | undefined;
  /** Send to end of response, model ms. */
  e2eMs: number | undefined;
  /** From the usage chunk, when the server sent one. */
  completionTokens: number | undefined;
}

export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
}

export interface LoadSummary {
  requests: number;
  ok: number;
  errors: number;
  /** Count per `error` class. */
  errorKinds: Record<string, number>;
  ttftMs: Percentiles;
  e2eMs: Percentiles;
  /** Fraction of all requests each worker served (by `x-sim-worker`, else by target). */
  share: Record<string, number>;
  /** Worst send lag; large values mean the generator could not keep the open-loop schedule. */
  maxSendLagMs: number;
}

/** Nearest-rank percentile of an ascending array; NaN when empty. */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

export function percentiles(values: readonly number[]): Percentiles {
  const s = [...values].sort((a, b) => a - b);
  const mean = s.length === 0 ? NaN : s.reduce((a, b) => a + b, 0) / s.length;
  return {
    p50: percentile(s, 0.5),
    p90: percentile(s, 0.9),
    p99: percentile(s, 0.99),
    mean,
    max: s.length === 0 ? NaN : s[s.length - 1]!,
  };
}

/** Latency percentiles count successful requests only; errors are reported beside them. */
export function summarize(records: readonly LoadRecord[]): LoadSummary {
  const ok = records.filter((r) => r.ok);
  const errorKinds: Record<string, number> = {};
  const shareCount: Record<string, number> = {};
  let maxSendLagMs = 0;
  for (const r of records) {
    if (!r.ok) errorKinds[r.error ?? 'unknown'] = (errorKinds[r.error ?? 'unknown'] ?? 0) + 1;
    const where = r.worker ?? r.target;
    if (where !== undefined) shareCount[where] = (shareCount[where] ?? 0) + 1;
    if (r.sendLagMs > maxSendLagMs) maxSendLagMs = r.sendLagMs;
  }
  const share: Record<string, number> = {};
  for (const key of Object.keys(shareCount).sort()) share[key] = shareCount[key]! / records.length;
  return {
    requests: records.length,
    ok: ok.length,
    errors: records.length - ok.length,
    errorKinds,
    ttftMs: percentiles(ok.map((r) => r.ttftMs!)),
    e2eMs: percentiles(ok.map((r) => r.e2eMs!)),
    share,
    maxSendLagMs,
  };
}
