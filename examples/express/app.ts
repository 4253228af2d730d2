// An Express app that load-balances an OpenAI-compatible API over several inference servers.
// Run: WORKERS=http://10.0.0.5:30000,http://10.0.0.6:8000 node --import tsx examples/express/app.ts
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import { Counter, Registry, collectDefaultMetrics } from 'prom-client';
import { leastLoadRouter } from '../../src/express/index.js';
import type { PolicyName } from '../../src/config/schema.js';
import type { Router } from '../../src/router.js';

export interface ExampleApp {
  app: Express;
  router: Router;
  close(): Promise<void>;
}

export function createApp(workers: string[], policy: PolicyName = 'least_load'): ExampleApp {
  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics });

  // The OpenAI-compatible API, mounted under /v1: workers receive /v1/chat/completions unchanged.
  const openai = leastLoadRouter({ workers, policy, metrics });

  // A second route on the SAME router (same in-flight counts, health and load), e.g. SGLang's
  // native /generate exposed as /sglang/generate.
  const native = leastLoadRouter({ router: openai.router, pathRewrite: { '^/sglang': '' } });

  // The proxy's own events, counted into the same registry.
  const upstreamErrors = new Counter({
    name: 'example_upstream_errors_total',
    help: 'Upstream failures seen by the proxy, by worker and phase (request = retriable, response = stream cut)',
    labelNames: ['worker', 'phase'],
    registers: [metrics],
  });
  for (const mw of [openai, native]) {
    mw.observe({ onUpstreamError: (e) => upstreamErrors.inc({ worker: e.worker.id, phase: e.phase }) });
  }

  const app = express();
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.contentType).send(await metrics.metrics());
  });
  app.get('/workers', (_req, res) => {
    res.json(openai.router.workers());
  });
  app.use('/v1', openai);
  app.use('/sglang', native);
  // `native` shares the router and does not own it: closing `openai` stops the polling.
  return { app, router: openai.router, close: () => openai.close() };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const workers = (process.env.WORKERS ?? process.argv.slice(2).join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (workers.length === 0) {
    console.error(
      'usage: WORKERS=http://host:port[,http://host:port...] node --import tsx examples/express/app.ts',
    );
    process.exit(2);
  }
  const { app, close } = createApp(workers, (process.env.POLICY as PolicyName | undefined) ?? 'least_load');
  const port = Number(process.env.PORT ?? 8080);
  const server: Server = app.listen(port, () => console.log(`listening on http://localhost:${port}`));
  const stop = () => server.close(() => void close());
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
