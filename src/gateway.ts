import type { Config } from './config/schema.js';
import { DnsDiscovery } from './discovery/dns-discovery.js';
import type { Logger } from './logging/logger.js';
import { silentLogger } from './logging/logger.js';
import { logRouterEvents } from './logging/router-logging.js';
import { RouterMetrics } from './metrics/router-metrics.js';
import { createExtProcServer } from './envoy/ext-proc-server.js';
import { startProxyServer, type ProxyServerOptions } from './express/standalone-proxy.js';
import { Router, type RouterOptions } from './router.js';
import { adminRequestHandler } from './status/admin-api.js';
import { startStatusServer } from './status/status-server.js';

/** A listener the gateway started: it stops taking new work on close() and resolves when done. */
export interface Listener {
  readonly name: string;
  readonly port: number;
  close(): Promise<void>;
}

export interface GatewayOptions extends RouterOptions {
  logger?: Logger;
}

/**
 * Everything `serve` runs, in one place: the router and its poller, metrics, the status/admin
 * port, DNS discovery and the front doors. The CLI adds signals and file watching on top; the
 * demo and the e2e tests drive it directly.
 */
export class Gateway {
  readonly router: Router;
  readonly metrics: RouterMetrics;
  readonly logger: Logger;
  readonly listeners: Listener[] = [];
  #discovery: DnsDiscovery | undefined;
  #closing: Promise<boolean> | undefined;

  constructor(config: Config, options: GatewayOptions = {}) {
    this.logger = options.logger ?? silentLogger;
    this.router = new Router(config, options);
    this.metrics = new RouterMetrics(this.router);
    logRouterEvents(this.router, this.logger);
  }

  get config(): Config {
    return this.router.config;
  }

  async start(): Promise<void> {
    const config = this.config;
    // With state.redis the router joins its replicas here; Redis being down never fails start.
    await this.router.start();
    const shared = this.router.sharedState;
    if (shared) {
      this.logger.info(
        { replica: shared.replicaId, joined: !shared.degraded, replicas: shared.replicas },
        'shared in-flight state started',
      );
    }
    if (config.discovery?.dns) {
      this.#discovery = new DnsDiscovery(this.router, { ...config.discovery.dns, logger: this.logger });
      await this.#discovery.start();
    }
  }

  /** The metrics/status port (with the admin API when a token is configured). */
  async startStatus(port: number): Promise<Listener> {
    const admin = this.config.admin
      ? adminRequestHandler(this.router, { token: this.config.admin.token })
      : undefined;
    const server = await startStatusServer(this.router, this.metrics, {
      port,
      host: this.config.host,
      admin,
    });
    return this.add({ name: 'status', port: server.port, close: () => server.close() });
  }

  /** The standalone HTTP reverse proxy (the Express middleware in an app of our own). */
  async startProxy(
    port: number,
    options: Omit<ProxyServerOptions, 'port' | 'observer'> = {},
  ): Promise<Listener> {
    const proxy = await startProxyServer(this.router, {
      shutdownGraceMs: this.config.shutdown.drainTimeoutSecs * 1000,
      ...options,
      port,
      observer: {
        onUpstreamError: (e) => this.metrics.proxyUpstreamError(e.worker.id, e.phase),
        onReject: (e) => this.metrics.rejected('proxy', e.status, e.code),
      },
    });
    return this.add({ name: 'proxy', port: proxy.port, close: () => proxy.close() });
  }

  /** The Envoy ext_proc gRPC server. */
  async startExtProc(port: number): Promise<Listener> {
    const server = await createExtProcServer(this.router, {
      port,
      observer: {
        onStreamOpen: () => this.metrics.streamOpened(),
        onStreamClose: () => this.metrics.streamClosed(),
      },
    });
    return this.add({ name: 'ext_proc', port: server.port, close: () => server.close() });
  }

  /** Registers a listener started elsewhere (a front door) so shutdown closes it. */
  add(listener: Listener): Listener {
    this.listeners.push(listener);
    return listener;
  }

  /** Applies a validated config; what cannot change live is logged, not silently ignored. */
  reload(next: Config): void {
    const result = this.router.reconfigure(next);
    this.logger.info(
      { added: result.added, removed: result.removed, policy: result.policy, poller: result.poller },
      'config reloaded',
    );
    if (result.restartNeeded.length > 0) {
      this.logger.warn({ keys: result.restartNeeded }, 'these settings take effect after a restart');
    }
  }

  /**
   * Stops taking new work, waits up to `deadlineMs` for requests in flight, then stops the rest.
   * Resolves true when everything drained in time.
   */
  shutdown(deadlineMs = this.config.shutdown.drainTimeoutSecs * 1000): Promise<boolean> {
    this.#closing ??= this.#shutdown(deadlineMs);
    return this.#closing;
  }

  async #shutdown(deadlineMs: number): Promise<boolean> {
    const frontDoors = this.listeners.filter((l) => l.name !== 'status');
    this.logger.info({ inFlight: this.router.inFlight(), deadlineMs }, 'shutting down: draining');
    const closing = Promise.all(frontDoors.map((l) => l.close()));
    const drained = await Promise.race([
      closing.then(() => this.#waitIdle(deadlineMs)),
      new Promise<false>((r) => setTimeout(() => r(false), deadlineMs).unref()),
    ]);
    await this.#discovery?.stop();
    for (const l of this.listeners.filter((x) => x.name === 'status')) await l.close();
    await this.router.stop();
    this.metrics.close();
    this.logger.info({ drained, inFlight: this.router.inFlight() }, 'stopped');
    return drained;
  }

  async #waitIdle(deadlineMs: number): Promise<boolean> {
    const until = Date.now() + deadlineMs;
    while (this.router.inFlight() > 0) {
      if (Date.now() >= until) return false;
      await new Promise((r) => setTimeout(r, 20));
    }
    return true;
  }
}
