import { performance } from 'node:perf_hooks';
import type { Redis, RedisOptions } from 'ioredis';
import type { RedisStateConfig } from '../config/schema.js';
import type { Worker } from '../core/worker.js';
import { silentPollerLogger, type PollerLogger } from '../poller/poller-logger.js';
import { SCRIPT_DEFINITIONS, type ScriptCommands } from './redis-scripts.js';
import { newReplicaId } from './replica-id.js';

/** What failed talking to Redis (the `op` label of `llr_shared_state_errors_total`). */
export type SharedStateOp = 'connection' | 'write' | 'refresh';
export const SHARED_STATE_OPS: readonly SharedStateOp[] = ['connection', 'write', 'refresh'];

/** Where the shared state reads the workers and reports errors; the Router implements it. */
export interface SharedStateHost {
  readonly pool: { list(): readonly Worker[]; get(id: string): Worker | undefined };
  notifySharedStateError(op: SharedStateOp, error: unknown): void;
}

export interface SharedInFlightOptions {
  config: RedisStateConfig;
  host: SharedStateHost;
  logger?: PollerLogger;
  /** Defaults to a new random id per instance (tests pin it). */
  replicaId?: string;
  /** Per-command limit: a hung Redis must free the one write and one read this keeps in the air. */
  commandTimeoutMs?: number;
}

type Client = Redis & ScriptCommands;

/** Longest gap between two full writes (re-registration), whatever the TTL. */
const MAX_HEARTBEAT_MS = 1000;
/**
 * Shortest gap between two delta writes. A write costs the client ~70 us of CPU; without a floor a
 * replica picking on every event-loop turn would write at Redis's round-trip rate. 1 ms adds at
 * most that much to what the others see, against a 5 ms refresh.
 */
const MIN_WRITE_GAP_MS = 1;

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'redis://?';
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * In-flight counts shared by the router replicas of one fleet through Redis, so a burst split
 * across replicas spreads as it would over one router.
 *
 * Nothing here is on the pick path. A pick or release changes `worker.ownInFlight` (exact, local)
 * and `worker.inFlight` at once and calls `changed()`, which only schedules a write for the next
 * turn of the event loop (at most one per millisecond): picks in between share one write, and while
 * a write is in the air further changes wait for it, so the write rate adapts to Redis's latency
 * instead of queueing. Writes carry absolute counts of this replica's own hash, never increments.
 * Every `refreshMs` one read sums the other live replicas' counts into `worker.remoteInFlight`, and
 * `inFlight` becomes own + remote. Policies keep reading `inFlight` and never wait for Redis.
 *
 * Redis down or hung: the replica keeps routing on what it knows (its own counts exactly, the
 * others' last known counts until they would have expired anyway, then 0), logs once, reports
 * `degraded`, and ioredis reconnects in the background; the first full write and read after the
 * reconnect rejoin the fleet.
 */
export class SharedInFlight {
  readonly replicaId: string;
  readonly #config: RedisStateConfig;
  readonly #host: SharedStateHost;
  readonly #logger: PollerLogger;
  readonly #commandTimeoutMs: number;
  readonly #ttlMs: number;
  readonly #replicasKey: string;
  readonly #hashPrefix: string;
  readonly #ownKey: string;
  /** Counts as last sent, so a delta write carries only what changed. */
  readonly #sent = new Map<string, number>();
  #client: Client | undefined;
  #refreshTimer: NodeJS.Timeout | undefined;
  #heartbeatTimer: NodeJS.Timeout | undefined;
  #writing: Promise<boolean> | undefined;
  #reading: Promise<boolean> | undefined;
  /** A change waits for the next write. */
  #dirty = false;
  /** The next write must replace the whole hash (first write, after an error or a reconnect). */
  #needFull = true;
  #started = false;
  #joined = false;
  #warned = false;
  #lastReadAt = 0;
  #remoteNonZero = false;
  #replicas = 0;
  #rejoining: Promise<void> | undefined;
  #writes = 0;
  #scheduled = false;
  #lastWriteAt = -Infinity;
  #reads = 0;

  constructor(options: SharedInFlightOptions) {
    this.#config = options.config;
    this.#host = options.host;
    this.#logger = options.logger ?? silentPollerLogger;
    this.#commandTimeoutMs = options.commandTimeoutMs ?? 1000;
    this.replicaId = options.replicaId ?? newReplicaId();
    this.#ttlMs = Math.round(options.config.heartbeatTtlSecs * 1000);
    this.#replicasKey = `${options.config.keyPrefix}replicas`;
    this.#hashPrefix = `${options.config.keyPrefix}inflight:`;
    this.#ownKey = `${this.#hashPrefix}${this.replicaId}`;
  }

  /** True while started but not in touch with Redis: routing runs on this replica's own view. */
  get degraded(): boolean {
    return this.#started && !this.#joined;
  }

  /** Live replicas (this one included) at the last successful read. */
  get replicas(): number {
    return this.#replicas;
  }

  /** Writes sent to Redis so far (a burst of picks in one event-loop turn shares one). */
  get writes(): number {
    return this.#writes;
  }

  /** Reads of the other replicas' counts sent so far. */
  get reads(): number {
    return this.#reads;
  }

  /** Hot path (every pick and release): marks the counts dirty; the write happens off the path. */
  changed(): void {
    if (this.#dirty) return;
    this.#dirty = true;
    if (this.#writing === undefined && this.#started) this.#scheduleWrite();
  }

  /** Next turn of the event loop, but at most one write per MIN_WRITE_GAP_MS: a busy replica batches. */
  #scheduleWrite(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const wait = this.#lastWriteAt + MIN_WRITE_GAP_MS - performance.now();
    if (wait <= 0) setImmediate(this.#flushSoon);
    else setTimeout(this.#flushSoon, wait).unref();
  }

  readonly #flushSoon = (): void => {
    this.#scheduled = false;
    if (this.#dirty && this.#writing === undefined) void this.flush();
  };

  /**
   * Connects (in the background when Redis is not there yet: start never fails because of Redis),
   * registers this replica and begins refreshing. Resolves after the first read or the first failure.
   */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    // Loaded on first use: a router without shared state never pays for the client.
    const { Redis } = await import('ioredis');
    if (!this.#started) return; // stopped while loading
    const options: RedisOptions = {
      lazyConnect: true,
      // Commands while disconnected fail at once instead of piling up for a flood on reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: this.#commandTimeoutMs,
      connectTimeout: Math.max(this.#commandTimeoutMs, 1000),
      retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
      scripts: SCRIPT_DEFINITIONS,
    };
    const client = new Redis(this.#config.url, options) as Client;
    this.#client = client;
    client.on('error', (err: unknown) => this.#fail('connection', err));
    client.on('close', () => {
      if (this.#joined) this.#fail('connection', new Error('connection to Redis closed'));
    });
    client.on('ready', () => {
      this.#needFull = true;
      this.#rejoining = this.#rejoin();
    });
    this.#refreshTimer = setInterval(this.#tick, this.#config.refreshMs);
    this.#refreshTimer.unref();
    const heartbeatMs = Math.min(MAX_HEARTBEAT_MS, Math.max(10, Math.floor(this.#ttlMs / 3)));
    this.#heartbeatTimer = setInterval(this.#heartbeat, heartbeatMs);
    this.#heartbeatTimer.unref();
    try {
      await client.connect();
      await this.#rejoining;
    } catch {
      // Reported through the 'error' event; ioredis keeps retrying in the background.
    }
  }

  /**
   * Leaves the fleet cleanly: this replica's share disappears at once rather than after the TTL
   * (its requests still in flight are this process's business from now on).
   */
  async stop(): Promise<void> {
    if (!this.#started) return;
    this.#started = false;
    clearInterval(this.#refreshTimer);
    clearInterval(this.#heartbeatTimer);
    const client = this.#client;
    this.#client = undefined;
    this.#joined = false;
    this.#clearRemote();
    if (!client) return;
    if (client.status === 'ready') {
      await Promise.allSettled([this.#writing, this.#reading]);
      await client
        .multi()
        .zrem(this.#replicasKey, this.replicaId)
        .del(this.#ownKey)
        .exec()
        .catch(() => undefined);
      await client.quit().catch(() => undefined);
    }
    client.disconnect();
  }

  /** Writes what changed since the last write (everything after an error). Resolves true when Redis took it. */
  flush(): Promise<boolean> {
    return this.#write(false);
  }

  /**
   * Re-reads the other replicas' counts (the timer does this every refreshMs). The read is sent
   * after the call, so it sees every write that completed before it.
   */
  refresh(): Promise<boolean> {
    return this.#reading ? this.#reading.then(() => this.#read()) : this.#read();
  }

  /** One read at a time: a timer tick that finds one in the air skips. */
  #read(): Promise<boolean> {
    if (this.#reading) return this.#reading;
    const client = this.#client;
    if (!client || client.status !== 'ready') return Promise.resolve(false);
    this.#reads += 1;
    const reading = client
      .llrReadOthers(this.#replicasKey, this.#hashPrefix, this.replicaId, this.#ttlMs)
      .then(
        (reply) => {
          this.#apply(reply);
          this.#lastReadAt = Date.now();
          this.#ok();
          return true;
        },
        (err: unknown) => {
          this.#fail('refresh', err);
          return false;
        },
      )
      .finally(() => {
        this.#reading = undefined;
      });
    this.#reading = reading;
    return reading;
  }

  readonly #tick = (): void => {
    if (this.#client?.status === 'ready') void this.#read();
    if (!this.#joined && this.#remoteNonZero && Date.now() - this.#lastReadAt > this.#ttlMs) {
      // Out of touch for as long as the others' counts would live in Redis: forget them.
      this.#clearRemote();
    }
  };

  readonly #heartbeat = (): void => {
    this.#needFull = true;
    void this.#write(false);
  };

  async #rejoin(): Promise<void> {
    await this.#write(true);
    await this.refresh();
  }

  #write(full: boolean): Promise<boolean> {
    if (this.#writing) {
      // One write in the air at a time; this one's changes go with the next.
      this.#dirty = true;
      if (full) this.#needFull = true;
      return this.#writing.then(() => this.#write(false));
    }
    const client = this.#client;
    if (!client || client.status !== 'ready') return Promise.resolve(false);
    const all = full || this.#needFull;
    this.#dirty = false;
    this.#needFull = false;
    const pairs = this.#pairs(all);
    if (!all && pairs.length === 0) return Promise.resolve(true);
    this.#writes += 1;
    this.#lastWriteAt = performance.now();
    const writing = client
      .llrWriteOwn(this.#replicasKey, this.#ownKey, this.replicaId, this.#ttlMs, all ? '1' : '0', ...pairs)
      .then(
        () => true,
        (err: unknown) => {
          // Unknown what Redis holds now: the next write replaces the whole hash.
          this.#needFull = true;
          this.#fail('write', err);
          return false;
        },
      )
      .finally(() => {
        this.#writing = undefined;
        if (this.#dirty && this.#started) this.#scheduleWrite();
      });
    this.#writing = writing;
    return writing;
  }

  /** Field/count pairs: every non-zero count for a full write, else what changed since the last one. */
  #pairs(full: boolean): string[] {
    const pairs: string[] = [];
    const sent = this.#sent;
    if (full) sent.clear();
    const pool = this.#host.pool;
    let inPool = 0;
    for (const w of pool.list()) {
      const own = w.ownInFlight;
      const before = sent.get(w.id) ?? 0;
      if (before !== own) {
        pairs.push(w.id, String(own));
        if (own === 0) sent.delete(w.id);
        else sent.set(w.id, own);
      }
      if (own !== 0) inPool += 1;
    }
    if (sent.size > inPool) {
      // A worker left the pool with a count still written.
      for (const id of sent.keys()) {
        if (pool.get(id) !== undefined) continue;
        pairs.push(id, '0');
        sent.delete(id);
      }
    }
    return pairs;
  }

  #apply(reply: unknown): void {
    const [replicas, flat] = reply as [number, string[]];
    this.#replicas = replicas;
    const pool = this.#host.pool;
    const list = pool.list();
    for (const w of list) w.remoteInFlight = 0;
    let any = false;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const w = pool.get(flat[i] as string);
      const n = Number(flat[i + 1]);
      if (w !== undefined && n > 0) {
        w.remoteInFlight = n;
        any = true;
      }
    }
    for (const w of list) w.inFlight = w.ownInFlight + w.remoteInFlight;
    this.#remoteNonZero = any;
  }

  #clearRemote(): void {
    for (const w of this.#host.pool.list()) {
      w.remoteInFlight = 0;
      w.inFlight = w.ownInFlight;
    }
    this.#remoteNonZero = false;
  }

  #ok(): void {
    if (this.#joined || !this.#started) return;
    this.#joined = true;
    if (this.#warned) {
      this.#warned = false;
      this.#logger.info(
        { replica: this.replicaId, redis: redact(this.#config.url) },
        'shared state rejoined',
      );
    }
  }

  #fail(op: SharedStateOp, err: unknown): void {
    this.#host.notifySharedStateError(op, err);
    this.#joined = false;
    if (this.#warned || !this.#started) return;
    this.#warned = true;
    this.#logger.warn(
      { replica: this.replicaId, redis: redact(this.#config.url), op, err: message(err) },
      "shared state unavailable: routing on this replica's own view until Redis is back",
    );
  }
}
