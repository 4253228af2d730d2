import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EngineLoop } from './engine-loop.js';
import { EngineModel, type EngineState, type FinishReason, type RequestHandle } from './engine-model.js';
import type { EngineParams } from './engine-params.js';
import { SimConfigError, SimRequestError } from './errors.js';
import { type RankReport, sglangLoads, vllmMetrics } from './load-report.js';
import {
  type ApiKind,
  type ChunkHeader,
  errorBody,
  fullResponse,
  newId,
  SSE_DONE,
  streamChunk,
  tokensText,
  usageChunk,
} from './openai-format.js';
import { blockKeys, type PrefixCacheOptions } from './prefix-cache.js';
import { CHARS_PER_TOKEN, estimatePromptTokens, promptText } from './tokens.js';

/** Which engine's load endpoint the worker imitates; the other one answers 404. */
export type LoadFormat = 'sglang' | 'vllm';
export const LOAD_FORMATS: readonly LoadFormat[] = ['sglang', 'vllm'];

/** Response header naming the simulated worker that served a request. */
export const SIM_WORKER_HEADER = 'x-sim-worker';
/**
 * Request headers that override the estimated prompt size and the actual output length. A prompt
 * size given by header marks the body's text as a stand-in, so that text is not hashed into the
 * prefix cache: load generators pad every prompt with the same filler, which would otherwise hit.
 */
export const SIM_PROMPT_TOKENS_HEADER = 'x-sim-prompt-tokens';
export const SIM_OUTPUT_TOKENS_HEADER = 'x-sim-output-tokens';

export interface SimWorkerSpec extends Partial<EngineParams> {
  /** Shown in `x-sim-worker`, /sim/stats and benchmark tables. */
  name: string;
  loadFormat?: LoadFormat;
  /** Data-parallel ranks, each its own engine; requests are dealt round-robin (SGLang's default). */
  dpRanks?: number;
  /** Tokens per SSE chunk after the first, like `--stream-interval`; the first token goes alone. */
  streamInterval?: number;
  /** Model name reported when the request names none. */
  servedModel?: string;
  /** max_tokens when a request omits it. */
  defaultMaxTokens?: number;
  /** Reported in SGLang's /v1/loads envelope. */
  accelerator?: string;
  /** Per-rank prefix cache (default on, budget = KV capacity, 16-token blocks); `{ enabled: false }` turns it off. */
  prefixCache?: PrefixCacheOptions;
}

export interface SimServerOptions {
  host?: string;
  port?: number;
  /** Model time runs this many times faster than wall time (see EngineLoop). */
  speedup?: number;
  maxLagMs?: number;
}

/** True state right now, summed over ranks: what an oracle policy reads in-process. */
export interface SimWorkerState extends EngineState {
  name: string;
  ranks: EngineState[];
}

export interface SimStats {
  name: string;
  url: string;
  loadFormat: LoadFormat;
  served: number;
  aborted: number;
  rejected: number;
  preemptions: number;
  peakKvTokens: number;
  kvTokens: number;
  kvCapacityTokens: number;
  running: number;
  waiting: number;
  waitingTokens: number;
  promptTokens: number;
  generatedTokens: number;
  recomputedTokens: number;
  speedup: number;
  /** Times a rank's step loop fell too far behind wall time and skipped ahead (machine overload). */
  lagResyncs: number;
  maxLagMs: number;
  /** Prompt tokens looked up in the prefix cache on admission (recomputations included). */
  prefixQueryTokens: number;
  /** Of those, tokens served from the cache instead of computed. */
  prefixHitTokens: number;
  /** Tokens held in cache blocks now, referenced or idle. */
  prefixCachedTokens: number;
  /** Idle cached tokens evicted so far. */
  prefixEvictedTokens: number;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** One simulated inference server on a real HTTP socket. */
export class SimServer {
  readonly name: string;
  readonly spec: Readonly<SimWorkerSpec>;
  readonly loadFormat: LoadFormat;
  readonly speedup: number;
  readonly #loops: EngineLoop[];
  readonly #server: Server;
  readonly #createdSec = Date.now() / 1000;
  #next = 0;
  #seq = 0;
  #rejected = 0;
  #host = '';
  #port = 0;

  private constructor(spec: SimWorkerSpec, options: SimServerOptions) {
    const ranks = spec.dpRanks ?? 1;
    if (!(Number.isInteger(ranks) && ranks >= 1)) throw new SimConfigError(`dpRanks must be an integer >= 1`);
    const interval = spec.streamInterval ?? 1;
    if (!(Number.isInteger(interval) && interval >= 1)) {
      throw new SimConfigError(`streamInterval must be an integer >= 1, got ${interval}`);
    }
    this.loadFormat = spec.loadFormat ?? 'sglang';
    if (!LOAD_FORMATS.includes(this.loadFormat)) {
      throw new SimConfigError(
        `loadFormat must be one of ${LOAD_FORMATS.join(', ')}, got ${this.loadFormat}`,
      );
    }
    this.name = spec.name;
    this.spec = spec;
    this.#loops = Array.from(
      { length: ranks },
      () =>
        new EngineLoop(new EngineModel(spec, spec.prefixCache), {
          speedup: options.speedup,
          maxLagMs: options.maxLagMs,
        }),
    );
    this.speedup = this.#loops[0]!.speedup;
    this.#server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => this.#handle(req, res));
  }

  static async start(spec: SimWorkerSpec, options: SimServerOptions = {}): Promise<SimServer> {
    const s = new SimServer(spec, options);
    await new Promise<void>((resolve, reject) => {
      s.#server.once('error', reject);
      s.#server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        s.#server.off('error', reject);
        resolve();
      });
    });
    const addr = s.#server.address() as AddressInfo;
    s.#host = addr.address;
    s.#port = addr.port;
    return s;
  }

  get port(): number {
    return this.#port;
  }

  /** `host:port`, the same id the router gives this worker. */
  get id(): string {
    return `${this.#host}:${this.#port}`;
  }

  get url(): string {
    return `http://${this.#host}:${this.#port}`;
  }

  /** Model milliseconds now (wall time x speedup), the clock the engine runs on. */
  now(): number {
    return this.#loops[0]!.now();
  }

  state(): SimWorkerState {
    const ranks = this.#loops.map((l) => l.model.state());
    const sum = (f: (s: EngineState) => number) => ranks.reduce((a, s) => a + f(s), 0);
    const kv = sum((s) => s.kvTokens);
    const cap = sum((s) => s.kvCapacityTokens);
    return {
      name: this.name,
      kvTokens: kv,
      kvCapacityTokens: cap,
      kvUsage: kv / cap,
      running: sum((s) => s.running),
      waiting: sum((s) => s.waiting),
      waitingTokens: sum((s) => s.waitingTokens),
      prefillBacklogTokens: sum((s) => s.prefillBacklogTokens),
      ranks,
    };
  }

  stats(): SimStats {
    const st = this.state();
    const c = this.#loops.map((l) => l.model.counters);
    const sum = (f: (x: (typeof c)[number]) => number) => c.reduce((a, x) => a + f(x), 0);
    return {
      name: this.name,
      url: this.url,
      loadFormat: this.loadFormat,
      served: sum((x) => x.served),
      aborted: sum((x) => x.aborted),
      rejected: this.#rejected,
      preemptions: sum((x) => x.preemptions),
      peakKvTokens: sum((x) => x.peakKvTokens),
      kvTokens: st.kvTokens,
      kvCapacityTokens: st.kvCapacityTokens,
      running: st.running,
      waiting: st.waiting,
      waitingTokens: st.waitingTokens,
      promptTokens: sum((x) => x.promptTokens),
      generatedTokens: sum((x) => x.generatedTokens),
      recomputedTokens: sum((x) => x.recomputedTokens),
      speedup: this.speedup,
      lagResyncs: this.#loops.reduce((a, l) => a + l.resyncs, 0),
      maxLagMs: Math.max(...this.#loops.map((l) => l.maxLagMs)),
      prefixQueryTokens: sum((x) => x.prefixQueryTokens),
      prefixHitTokens: sum((x) => x.prefixHitTokens),
      prefixCachedTokens: this.#loops.reduce((a, l) => a + (l.model.prefixCache?.cachedTokens ?? 0), 0),
      prefixEvictedTokens: this.#loops.reduce((a, l) => a + (l.model.prefixCache?.evictedTokens ?? 0), 0),
    };
  }

  /** Stops the engines (in-flight requests are cut off) and closes every connection. */
  async close(): Promise<void> {
    for (const l of this.#loops) l.stop();
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  #rankReports(): RankReport[] {
    return this.#loops.map((l, rank) => ({
      rank,
      state: l.model.state(),
      counters: l.model.counters,
      genThroughput: l.model.genThroughput,
      maxBatchSize: l.model.params.maxBatchSize,
      prefixCaching: l.model.prefixCache !== undefined,
      idleCachedTokens: l.model.prefixCache?.idleTokens ?? 0,
    }));
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    res.setHeader(SIM_WORKER_HEADER, this.name);
    if (req.method === 'POST' && path === '/v1/completions') return this.#generate(req, res, 'completion');
    if (req.method === 'POST' && path === '/v1/chat/completions') return this.#generate(req, res, 'chat');
    if (req.method === 'GET' || req.method === 'HEAD') {
      switch (path) {
        case '/health':
          res.writeHead(200).end();
          return;
        case '/v1/models':
          return sendJson(res, 200, {
            object: 'list',
            data: [
              { id: this.#servedModel(), object: 'model', owned_by: 'sim', max_model_len: this.#maxLen() },
            ],
          });
        case '/sim/stats':
          return sendJson(res, 200, this.stats());
        case '/v1/loads':
          if (this.loadFormat !== 'sglang') break;
          return sendJson(
            res,
            200,
            sglangLoads(this.#rankReports(), {
              version: '0.5.15-sim',
              accelerator: this.spec.accelerator ?? 'simulated',
              numAccelerators: this.#loops.length,
            }),
          );
        case '/metrics':
          if (this.loadFormat !== 'vllm') break;
          res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
          res.end(vllmMetrics(this.#rankReports(), this.#servedModel(), this.#createdSec, 1 / this.speedup));
          return;
      }
    }
    sendJson(res, 404, errorBody(`no route ${req.method} ${path}`, 'not_found_error'));
  }

  #servedModel(): string {
    return this.spec.servedModel ?? 'sim-model';
  }

  #maxLen(): number {
    return this.#loops[0]!.model.params.maxModelLen;
  }

  #generate(req: IncomingMessage, res: ServerResponse, kind: ApiKind): void {
    readBody(req)
      .then((raw) => this.#start(req, res, kind, raw))
      .catch((err: unknown) => {
        if (res.headersSent) return;
        if (err instanceof SimRequestError) {
          this.#rejected++;
          sendJson(res, 400, errorBody(err.message));
        } else {
          sendJson(res, 500, errorBody(String(err), 'server_error'));
        }
      });
  }

  #start(req: IncomingMessage, res: ServerResponse, kind: ApiKind, raw: string): void {
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(raw);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      throw new SimRequestError('request body must be a JSON object');
    }
    const sizedByHeader = headerInt(req, SIM_PROMPT_TOKENS_HEADER);
    const promptTokens = sizedByHeader ?? Math.max(1, estimatePromptTokens(body));
    const maxRaw = body.max_tokens ?? body.max_completion_tokens ?? this.spec.defaultMaxTokens ?? 128;
    if (typeof maxRaw !== 'number' || !Number.isInteger(maxRaw) || maxRaw < 1) {
      throw new SimRequestError(`max_tokens must be a positive integer, got ${JSON.stringify(maxRaw)}`);
    }
    const outputTokens = headerInt(req, SIM_OUTPUT_TOKENS_HEADER);
    const stream = body.stream === true;
    const opts = body.stream_options as { include_usage?: unknown } | undefined;
    const includeUsage = stream && opts?.include_usage === true;
    const h: ChunkHeader = {
      id: newId(kind, ++this.#seq),
      model: typeof body.model === 'string' ? body.model : this.#servedModel(),
      created: Math.floor(Date.now() / 1000),
    };
    const interval = this.spec.streamInterval ?? 1;
    const loop = this.#loops[this.#next++ % this.#loops.length]!;
    const cache = loop.model.prefixCache;
    const text = cache && sizedByHeader === undefined ? promptText(body) : undefined;
    const prefixKeys =
      text === undefined
        ? undefined
        : blockKeys(
            text,
            Math.floor(promptTokens / cache!.blockTokens),
            cache!.blockTokens * CHARS_PER_TOKEN,
          );

    let sent = 0; // tokens already written to the stream
    let done = false;
    const finish = (reason: FinishReason, generated: number): void => {
      done = true;
      if (reason === 'abort') {
        // The engine is shutting down: cut the stream like a crashed server would.
        if (res.headersSent) res.destroy();
        else sendJson(res, 503, errorBody('server shutting down', 'server_error'));
        return;
      }
      const usage = {
        prompt_tokens: promptTokens,
        completion_tokens: generated,
        total_tokens: promptTokens + generated,
      };
      if (!stream) {
        sendJson(res, 200, fullResponse(kind, h, tokensText(1, generated), reason, usage));
        return;
      }
      res.write(streamChunk(kind, h, tokensText(sent + 1, generated), reason, sent === 0, includeUsage));
      if (includeUsage) res.write(usageChunk(kind, h, usage));
      res.end(SSE_DONE);
    };

    const target = Math.min(maxRaw, outputTokens ?? maxRaw);
    let generated = 0;
    const handle: RequestHandle = loop.submit(
      {
        promptTokens,
        maxTokens: maxRaw,
        ...(outputTokens !== undefined ? { outputTokens } : {}),
        ...(prefixKeys !== undefined ? { prefixKeys } : {}),
      },
      {
        onToken: (n) => {
          generated = n;
          // The last token goes out with finish_reason in finish(), which the engine calls next.
          if (!stream || done || n >= target) return;
          if (n - sent >= (sent === 0 ? 1 : interval)) {
            res.write(streamChunk(kind, h, tokensText(sent + 1, n), null, sent === 0, includeUsage));
            sent = n;
          }
        },
        onFinish: (reason) => finish(reason, generated),
      },
    );
    if (stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
    }
    // A client that goes away frees its KV at once, as vLLM and SGLang abort on disconnect.
    res.on('close', () => {
      if (!done) handle.abort();
    });
  }
}

export function startSimServer(spec: SimWorkerSpec, options: SimServerOptions = {}): Promise<SimServer> {
  return SimServer.start(spec, options);
}

function headerInt(req: IncomingMessage, name: string): number | undefined {
  const v = req.headers[name];
  if (typeof v !== 'string' || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new SimRequestError(`${name} must be a positive integer, got ${v}`);
  return n;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new SimRequestError(`request body larger than ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
