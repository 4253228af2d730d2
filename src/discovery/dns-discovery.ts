import { promises as dns } from 'node:dns';
import { parseWorkerUrl, type EngineName } from '../core/worker.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { Router } from '../router.js';

/** The resolver calls we use; node's dns.promises.Resolver fits, and tests inject their own. */
export interface DnsResolver {
  resolve4(name: string): Promise<string[]>;
  resolve6(name: string): Promise<string[]>;
  resolveSrv(name: string): Promise<{ name: string; port: number }[]>;
}

export interface DnsDiscoveryOptions {
  /** e.g. a Kubernetes headless service `vllm.llm.svc.cluster.local`, or an SRV name `_http._tcp.vllm...`. */
  name: string;
  /** Port for A/AAAA answers; SRV answers carry their own. */
  port?: number;
  /** Use SRV records (ports from DNS). Default: true when the name starts with `_`. */
  srv?: boolean;
  intervalSecs: number;
  engine?: EngineName;
  scheme?: 'http' | 'https';
  resolver?: DnsResolver;
  logger?: Logger;
}

const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'ENONAME']);

/**
 * Resolves a name on an interval and reconciles the pool: new addresses become workers, vanished
 * ones are removed (drained). It only ever removes workers it added itself, so statically
 * configured workers are left alone. A failed lookup keeps the current set: a DNS hiccup must not
 * empty the fleet.
 */
export class DnsDiscovery {
  readonly #router: Router;
  readonly #options: DnsDiscoveryOptions;
  readonly #resolver: DnsResolver;
  readonly #logger: Logger;
  readonly #owned = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #lastError: string | undefined;

  constructor(router: Router, options: DnsDiscoveryOptions) {
    this.#router = router;
    this.#options = options;
    this.#resolver = options.resolver ?? new dns.Resolver();
    this.#logger = options.logger ?? silentLogger;
  }

  /** Resolves once now, then on every interval. */
  async start(): Promise<void> {
    await this.refresh();
    const tick = (): void => {
      this.#timer = setTimeout(() => {
        void this.refresh().finally(() => {
          if (this.#timer !== undefined) tick();
        });
      }, this.#options.intervalSecs * 1000);
      this.#timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** One resolve-and-reconcile pass; concurrent callers share the pass in progress. */
  refresh(): Promise<void> {
    this.#running ??= this.#refresh().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #resolveUrls(): Promise<string[]> {
    const { name, port, scheme = 'http' } = this.#options;
    const srv = this.#options.srv ?? name.startsWith('_');
    if (srv) {
      const records = await this.#resolver.resolveSrv(name);
      return records.map((r) => `${scheme}://${r.name.replace(/\.$/, '')}:${r.port}`);
    }
    const settle = async (lookup: Promise<string[]>): Promise<string[]> => {
      try {
        return await lookup;
      } catch (err) {
        if (NOT_FOUND.has((err as NodeJS.ErrnoException).code ?? '')) return [];
        throw err;
      }
    };
    const [v4, v6] = await Promise.all([
      settle(this.#resolver.resolve4(name)),
      settle(this.#resolver.resolve6(name)),
    ]);
    const p = port ?? (scheme === 'https' ? 443 : 80);
    return [...v4.map((ip) => `${scheme}://${ip}:${p}`), ...v6.map((ip) => `${scheme}://[${ip}]:${p}`)];
  }

  async #refresh(): Promise<void> {
    let urls: string[];
    try {
      urls = await this.#resolveUrls();
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.#lastError) {
        this.#logger.warn(
          { name: this.#options.name, err: message },
          'dns discovery failed; keeping current workers',
        );
      }
      this.#lastError = message;
      return;
    }
    this.#lastError = undefined;
    const wanted = new Map<string, string>();
    for (const url of urls) wanted.set(idOf(url), url);
    for (const url of wanted.values()) {
      const spec = { url, ...(this.#options.engine ? { engine: this.#options.engine } : {}) };
      try {
        const worker = this.#router.addWorker(spec, 'discovery');
        this.#owned.add(worker.id);
        this.#logger.info({ worker: worker.id, name: this.#options.name }, 'worker discovered');
      } catch (err) {
        if ((err as { code?: string }).code !== 'LLR_DUPLICATE_WORKER') throw err;
      }
    }
    for (const id of [...this.#owned]) {
      if (wanted.has(id)) continue;
      this.#owned.delete(id);
      if (this.#router.pool.has(id)) {
        this.#router.removeWorker(id);
        this.#logger.info({ worker: id, name: this.#options.name }, 'worker gone from DNS; draining');
      }
    }
  }
}

const idOf = (url: string): string => parseWorkerUrl(url).id;
