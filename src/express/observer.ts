import type { Worker } from '../core/worker.js';

/** Where in the exchange an upstream failure happened. */
export type UpstreamPhase =
  /** Before any response byte: connection refused or reset, connect timeout. */
  | 'request'
  /** After the response started: the stream was cut (worker died, idle or total timeout). */
  | 'response';

export interface UpstreamErrorEvent {
  worker: Worker;
  phase: UpstreamPhase;
  error: Error;
  /** True when the request is being replayed on another worker. */
  retried: boolean;
}

export interface UpstreamResponseEvent {
  worker: Worker;
  status: number;
}

export interface RejectEvent {
  /** The status we answered with ourselves (413, 502, 503, 504, 500). */
  status: number;
  /** The LlrError code in the JSON body. */
  code: string;
}

/**
 * What the proxy front door saw, for metrics and logging. Router-level events (picks, releases,
 * health changes) come from `router.observe()`; these are the ones only a proxy knows about.
 */
export interface ProxyObserver {
  onUpstreamError?(event: UpstreamErrorEvent): void;
  /** Response headers arrived from a worker (every proxied response, 5xx included). */
  onUpstreamResponse?(event: UpstreamResponseEvent): void;
  onReject?(event: RejectEvent): void;
}
