import type { EngineModel } from '../../src/sim/engine-model.js';
import { request } from 'node:http';
import type { TestContext } from 'node:test';
import { type SimServer, type SimWorkerSpec, startSimServer } from '../../src/sim/sim-server.js';

/** A fast, small worker for HTTP tests; speedup keeps each test well under a second. */
export const TEST_WORKER: SimWorkerSpec = {
  name: 'w-test',
  kvCapacityTokens: 8000,
  prefillTokensPerSec: 20000,
  decodeStepBaseMs: 10,
  decodePerSeqMs: 0.5,
  maxBatchSize: 16,
  maxBatchTokens: 2048,
};

export async function startWorker(
  t: TestContext,
  spec: Partial<SimWorkerSpec> = {},
  speedup = 10,
): Promise<SimServer> {
  const s = await startSimServer({ ...TEST_WORKER, ...spec }, { speedup });
  t.after(() => s.close());
  return s;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const payload = typeof body === 'string' ? body : JSON.stringify(body);
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.end(payload);
  });
}

export async function get(url: string): Promise<RawResponse> {
  const res = await fetch(url);
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
}

/** Splits an SSE body into its `data:` payloads, checking the `data: x\n\n` framing on the way. */
export function sseData(body: string): string[] {
  if (!body.endsWith('\n\n')) throw new Error('SSE body must end with a blank line');
  return body
    .slice(0, -2)
    .split('\n\n')
    .map((event) => {
      if (!event.startsWith('data: ')) throw new Error(`not an SSE data event: ${event.slice(0, 80)}`);
      return event.slice(6);
    });
}

/** Waits (bounded) for a condition the server reaches asynchronously, e.g. after a disconnect. */
export async function until(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Steps the model on a virtual clock until idle; returns the end time. */
export function drain(model: EngineModel, t = 0, onStep?: (now: number) => void): number {
  for (let d = model.beginStep(t); d !== undefined; d = model.beginStep(t)) {
    t += d;
    model.endStep(t);
    onStep?.(t);
  }
  return t;
}
