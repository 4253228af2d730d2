// Tiny real HTTP inference workers for the e2e tests: each answers every request with JSON naming
// itself (or with a status the test sets), and serves a vLLM-style /metrics with its KV usage.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TestWorker {
  url: string;
  id: string;
  /** Requests served (excluding /metrics). */
  hits: number;
  /** Status code for the next requests. */
  status: number;
  /** KV usage reported on /metrics, 0..1. */
  kv: number;
  close(): Promise<void>;
}

export async function startWorker(): Promise<TestWorker> {
  const worker = { hits: 0, status: 200, kv: 0 } as TestWorker;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/metrics') {
        res.setHeader('content-type', 'text/plain; version=0.0.4');
        res.end(
          `# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name="m"} ${worker.kv}\n` +
            `# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 0\n` +
            `# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name="m"} 0\n`,
        );
        return;
      }
      worker.hits += 1;
      res.statusCode = worker.status;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ servedBy: worker.id, path: req.url, bytes: Buffer.concat(chunks).length }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  worker.url = `http://127.0.0.1:${port}`;
  worker.id = `127.0.0.1:${port}`;
  worker.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return worker;
}

export async function startWorkers(n: number): Promise<TestWorker[]> {
  return Promise.all(Array.from({ length: n }, () => startWorker()));
}
