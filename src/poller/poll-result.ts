/** How one load poll ended (the `result` label of `llr_load_polls_total`). */
export const POLL_RESULTS = ['ok', 'error', 'timeout', 'http_error', 'parse_error', 'too_large'] as const;
export type PollResult = (typeof POLL_RESULTS)[number];
