import { InvalidWorkerUrlError } from './errors.js';
import type { LoadSnapshot } from './load-snapshot.js';

export const ENGINE_NAMES = ['auto', 'sglang', 'vllm', 'llamacpp', 'trtllm', 'tgi', 'json', 'none'] as const;
export type EngineName = (typeof ENGINE_NAMES)[number];

/**
 * Where a `json` engine's values sit in its load document, as dot paths (`stats.kv`, `gpus.0.kv`).
 * With `ranks` (a path to an array of per-rank objects) the other paths are relative to each element.
 */
export interface LoadFieldPaths {
  ranks?: string;
  kvUsage?: string;
  running?: string;
  waiting?: string;
  waitingTokens?: string;
  throughput?: string;
  capacityTokens?: string;
}

export interface WorkerSpec {
  url: string;
  engine?: EngineName;
  apiKey?: string;
  weight?: number;
  models?: string[];
  /** `json` engine: path of the load endpoint, default `/load`. */
  loadPath?: string;
  /** `json` engine: where each value sits; default: the LoadSnapshot field names at the top level. */
  loadFields?: LoadFieldPaths;
  /** `tgi` engine: the server's --max-batch-total-tokens, which turns its batch size into a KV usage. */
  maxBatchTotalTokens?: number;
}

/** Parses a worker base URL into its canonical form and its `host:port` id. */
export function parseWorkerUrl(raw: string): { url: string; id: string; host: string; port: number } {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new InvalidWorkerUrlError(raw, 'not an absolute URL (expected e.g. http://10.0.0.5:30000)');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InvalidWorkerUrlError(
      raw,
      `protocol ${parsed.protocol} is not supported (use http: or https:)`,
    );
  }
  if (parsed.username || parsed.password) {
    throw new InvalidWorkerUrlError(raw, 'credentials in the URL are not supported (use apiKey)');
  }
  if (parsed.search || parsed.hash) {
    throw new InvalidWorkerUrlError(raw, 'a worker URL takes no query or fragment');
  }
  const port = parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
  const host = parsed.hostname;
  const path = parsed.pathname.replace(/\/+$/, '');
  return { url: `${parsed.protocol}//${host}:${port}${path}`, id: `${host}:${port}`, host, port };
}

/**
 * One inference server. The pool owns the health flags (so it can keep its candidate cache
 * right); the router owns `inFlight` and `processed`; the poller replaces `load`.
 */
export class Worker {
  readonly id: string;
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly engine: EngineName;
  readonly apiKey: string | undefined;
  readonly weight: number;
  readonly models: readonly string[];
  readonly loadPath: string | undefined;
  readonly loadFields: Readonly<LoadFieldPaths> | undefined;
  readonly maxBatchTotalTokens: number | undefined;

  /** What `auto` detection settled on; equals `engine` when that was explicit. */
  detectedEngine: EngineName | undefined;
  /** What policies read: this router's leases plus, with shared state, other replicas' (ownInFlight + remoteInFlight). */
  inFlight = 0;
  /** This router's own leases on the worker: exact and immediate, whatever the shared state does. */
  ownInFlight = 0;
  /** Other router replicas' leases as last read from the shared state; 0 without it. */
  remoteInFlight = 0;
  processed = 0;
  /** Latest report; replaced as a whole, never merged, so fields a worker stops reporting vanish. */
  load: LoadSnapshot | undefined;
  lastPollAt: number | undefined;
  consecutiveFailures = 0;

  #healthy = true;
  #draining = false;
  #onChange: (() => void) | undefined;

  constructor(spec: WorkerSpec | string) {
    const s = typeof spec === 'string' ? { url: spec } : spec;
    const parsed = parseWorkerUrl(s.url);
    this.id = parsed.id;
    this.url = parsed.url;
    this.host = parsed.host;
    this.port = parsed.port;
    this.engine = s.engine ?? 'auto';
    this.apiKey = s.apiKey;
    this.weight = s.weight ?? 1;
    this.models = s.models ?? [];
    this.loadPath = s.loadPath;
    this.loadFields = s.loadFields;
    this.maxBatchTotalTokens = s.maxBatchTotalTokens;
    this.detectedEngine = this.engine === 'auto' ? undefined : this.engine;
  }

  get healthy(): boolean {
    return this.#healthy;
  }

  /** Draining workers take no new picks; their in-flight requests finish. */
  get draining(): boolean {
    return this.#draining;
  }

  setHealthy(healthy: boolean): void {
    if (healthy === this.#healthy) return;
    this.#healthy = healthy;
    this.#onChange?.();
  }

  setDraining(): void {
    if (this.#draining) return;
    this.#draining = true;
    this.#onChange?.();
  }

  /** @internal the pool watches eligibility changes to refresh its candidate list. */
  watch(onChange: (() => void) | undefined): void {
    this.#onChange = onChange;
  }
}
