import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { makePromptText } from './tokens.js';
import { type LoadRecord, type LoadSummary, summarize } from './load-summary.js';
import type { WorkloadItem } from './workload.js';

/**
 * Open-loop load: every request of the workload is sent at its scheduled time whether or not
 * earlier ones have finished (closed-loop clients would slow down with the server and hide queueing,
 * which is exactly what a routing policy changes). Requests stream; TTFT is taken at the first SSE
 * data chunk, e2e at the end of the response. Uses node:http with a keep-alive agent, whose
 * per-request overhead is far below fetch's.
 */

export type LoadApi = 'chat' | 'completion';

/** What a target picker sees: enough to route on path, headers, model or prompt. */
export interface LoadRequest {
  item: WorkloadItem;
  path: string;
  body: Record<string, unknown>;
  /** The serialized body, exactly as it will be sent. */
  payload: string;
  headers: Record<string, string>;
}

export type PickOutcome = 'success' | 'failure' | 'cancelled';

/** A picker's answer when it needs more than a URL: extra headers, and a hook when the request ends. */
export interface TargetPick {
  baseUrl: string;
  headers?: Record<string, string>;
  done?(outcome: PickOutcome): void;
}

/** Chooses the destination per request, e.g. by asking an ext_proc server first. */
export type TargetPicker = (req: LoadRequest) => Promise<string | TargetPick> | string | TargetPick;

export interface LoadGeneratorOptions {
  /** A base URL (the router's proxy or one worker) or a picker called for every request. */
  target: string | TargetPicker;
  workload: readonly WorkloadItem[];
  api?: LoadApi;
  model?: string;
  /**
   * The simulator's speedup: the schedule is compressed by it and every measured duration is
   * multiplied by it, so records are in model ms whatever the compression.
   */
  timeScale?: number;
  /** Per-request limit in model ms; the request is aborted and recorded as `timeout`. */
  requestTimeoutMs?: number;
  /** Send a prompt of ~4 characters per token (default true); false sends a short placeholder. */
  promptText?: boolean;
  /**
   * Send `x-sim-prompt-tokens` so the simulator uses the exact size (default true). Never sent for
   * items that carry real `messages`: their text is the prompt, sized and prefix-cached by the
   * simulator like any real prompt.
   */
  sizeHeaders?: boolean;
  headers?: Record<string, string>;
  /** Reused across runs if given (and then not destroyed); otherwise one is made per run. */
  agent?: Agent;
  signal?: AbortSignal;
  onRecord?(record: LoadRecord): void;
}

export interface LoadResult {
  records: LoadRecord[];
  summary: LoadSummary;
  /** Wall-clock duration of the whole run, ms. */
  wallMs: number;
  timeScale: number;
}

export const API_PATHS: Readonly<Record<LoadApi, string>> = {
  chat: '/v1/chat/completions',
  completion: '/v1/completions',
};

/** Chat templates add ~4 tokens per message, which `estimatePromptTokens` counts back in. */
const CHAT_MESSAGE_OVERHEAD = 4;

/** Header carrying a workload item's session id. */
export const SESSION_ID_HEADER = 'x-session-id';

export function buildRequest(item: WorkloadItem, options: LoadGeneratorOptions): LoadRequest {
  const api = options.api ?? 'chat';
  const withText = options.promptText ?? true;
  const model = options.model ?? 'sim-model';
  const messages = item.messages;
  const body: Record<string, unknown> = messages
    ? api === 'chat'
      ? { model, messages }
      : { model, prompt: messages.map((m) => m.content).join('\n') }
    : api === 'chat'
      ? {
          model,
          messages: [
            {
              role: 'user',
              content: withText
                ? makePromptText(Math.max(1, item.promptTokens - CHAT_MESSAGE_OVERHEAD))
                : `request ${item.index}`,
            },
          ],
        }
      : { model, prompt: withText ? makePromptText(item.promptTokens) : `request ${item.index}` };
  body.max_tokens = item.maxTokens;
  body.stream = true;
  body.stream_options = { include_usage: true };
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if ((options.sizeHeaders ?? true) && !messages) headers['x-sim-prompt-tokens'] = String(item.promptTokens);
  if (item.sessionId !== undefined) headers[SESSION_ID_HEADER] = item.sessionId;
  return { item, path: API_PATHS[api], body, payload: JSON.stringify(body), headers };
}

/** Runs the workload open-loop and resolves once every request has finished or failed. */
export async function runLoad(options: LoadGeneratorOptions): Promise<LoadResult> {
  const scale = options.timeScale ?? 1;
  if (!(Number.isFinite(scale) && scale > 0)) throw new RangeError(`timeScale must be > 0, got ${scale}`);
  const agent = options.agent ?? new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 1024 });
  const items = [...options.workload].sort((a, b) => a.at - b.at);
  const records: LoadRecord[] = [];
  const pending = new Set<Promise<void>>();
  const t0 = performance.now();
  const modelNow = () => (performance.now() - t0) * scale;

  const launch = (item: WorkloadItem): void => {
    const p = sendOne(item, options, agent, scale, modelNow).then((r) => {
      records.push(r);
      options.onRecord?.(r);
      pending.delete(p);
    });
    pending.add(p);
  };

  await new Promise<void>((resolve) => {
    let next = 0;
    let timer: NodeJS.Timeout | undefined;
    const stop = () => {
      clearTimeout(timer);
      resolve();
    };
    options.signal?.addEventListener('abort', stop, { once: true });
    const tick = (): void => {
      if (options.signal?.aborted) return stop();
      const now = modelNow();
      while (next < items.length && items[next]!.at <= now) launch(items[next++]!);
      if (next >= items.length) {
        options.signal?.removeEventListener('abort', stop);
        return resolve();
      }
      timer = setTimeout(tick, (items[next]!.at - now) / scale);
    };
    tick();
  });
  while (pending.size > 0) await Promise.all(pending);
  if (!options.agent) agent.destroy();
  records.sort((a, b) => a.index - b.index);
  return { records, summary: summarize(records), wallMs: performance.now() - t0, timeScale: scale };
}

async function sendOne(
  item: WorkloadItem,
  options: LoadGeneratorOptions,
  agent: Agent,
  scale: number,
  modelNow: () => number,
): Promise<LoadRecord> {
  const req = buildRequest(item, options);
  const record: LoadRecord = {
    index: item.index,
    scheduledMs: item.at,
    sendLagMs: 0,
    promptTokens: item.promptTokens,
    maxTokens: item.maxTokens,
    target: undefined,
    worker: undefined,
    status: undefined,
    ok: false,
    error: undefined,
    ttftMs: undefined,
    e2eMs: undefined,
    completionTokens: undefined,
  };
  let pick: TargetPick;
  try {
    const chosen = typeof options.target === 'string' ? options.target : await options.target(req);
    pick = typeof chosen === 'string' ? { baseUrl: chosen } : chosen;
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    record.error = typeof code === 'string' ? `pick_failed:${code}` : 'pick_failed';
    record.sendLagMs = Math.max(0, modelNow() - item.at);
    return record;
  }
  record.target = pick.baseUrl;
  record.sendLagMs = Math.max(0, modelNow() - item.at);
  const outcome = await exchange(pick, req, record, options, agent, scale);
  pick.done?.(outcome);
  return record;
}

/** One HTTP exchange; fills `record` and says how it ended for the picker's `done` hook. */
function exchange(
  pick: TargetPick,
  req: LoadRequest,
  record: LoadRecord,
  options: LoadGeneratorOptions,
  agent: Agent,
  scale: number,
): Promise<PickOutcome> {
  return new Promise((resolve) => {
    const start = performance.now();
    const elapsed = () => (performance.now() - start) * scale;
    let settled = false;
    const finish = (outcome: PickOutcome, error?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      record.e2eMs = elapsed();
      record.error = error;
      record.ok = error === undefined;
      resolve(outcome);
    };
    const url = `${pick.baseUrl.replace(/\/+$/, '')}${req.path}`;
    const r = httpRequest(url, {
      method: 'POST',
      agent,
      headers: {
        ...req.headers,
        ...pick.headers,
        accept: 'text/event-stream',
        'content-length': String(Buffer.byteLength(req.payload)),
      },
    });
    const timeoutMs = (options.requestTimeoutMs ?? 300_000) / scale;
    const timer = setTimeout(() => {
      r.destroy();
      finish('cancelled', 'timeout');
    }, timeoutMs);
    const onAbort = () => {
      r.destroy();
      finish('cancelled', 'aborted');
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    r.on('error', (err: NodeJS.ErrnoException) => finish('failure', err.code ?? 'request_error'));
    r.on('response', (res: IncomingMessage) => {
      record.status = res.statusCode;
      const worker = res.headers['x-sim-worker'];
      if (typeof worker === 'string') record.worker = worker;
      res.setEncoding('utf8');
      if (res.statusCode !== 200) {
        res.resume();
        res.on('end', () => finish('failure', `http_${res.statusCode}`));
        res.on('error', () => finish('failure', `http_${res.statusCode}`));
        return;
      }
      const sse = new SseScanner();
      res.on('data', (chunk: string) => {
        sse.push(chunk);
        if (record.ttftMs === undefined && sse.firstData) record.ttftMs = elapsed();
      });
      res.on('end', () => {
        record.completionTokens = sse.completionTokens;
        if (sse.streamError) finish('failure', 'stream_error');
        else if (!sse.done) finish('failure', 'truncated');
        else if (record.ttftMs === undefined) finish('failure', 'no_tokens');
        else finish('success');
      });
      res.on('error', () => finish('failure', 'truncated'));
      res.on('aborted', () => finish('failure', 'truncated'));
    });
    r.end(req.payload);
  });
}

/** Incremental SSE reader that keeps only what the load generator needs. */
export class SseScanner {
  firstData = false;
  done = false;
  streamError = false;
  completionTokens: number | undefined;
  #buf = '';

  push(chunk: string): void {
    this.#buf += chunk;
    let end: number;
    while ((end = this.#buf.indexOf('\n\n')) >= 0) {
      const event = this.#buf.slice(0, end);
      this.#buf = this.#buf.slice(end + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;
        this.#data(line.slice(5).trim());
      }
    }
  }

  #data(payload: string): void {
    if (payload === '[DONE]') {
      this.done = true;
      return;
    }
    if (payload === '') return;
    this.firstData = true;
    if (payload.includes('"usage":{') || payload.includes('"error"')) {
      try {
        const parsed = JSON.parse(payload) as { usage?: { completion_tokens?: number }; error?: unknown };
        if (parsed.error !== undefined) this.streamError = true;
        if (typeof parsed.usage?.completion_tokens === 'number') {
          this.completionTokens = parsed.usage.completion_tokens;
        }
      } catch {
        this.streamError = true;
      }
    }
  }
}
