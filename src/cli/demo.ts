import { setMaxListeners } from 'node:events';
import { Agent } from 'node:http';
import type { PolicyConfig } from '../config/schema.js';
import { validateConfig } from '../config/validate.js';
import { Gateway } from '../gateway.js';
import { startFleet, type SimFleet } from '../sim/fleet.js';
import { runLoad } from '../sim/load-generator.js';
import type { LoadSummary } from '../sim/load-summary.js';
import { scenarioCapacity, waitForFirstPolls } from '../sim/policy-comparison.js';
import type { ScenarioName } from '../sim/scenarios.js';
import { createWorkload } from '../sim/workload.js';

export interface DemoOptions {
  durationSec: number;
  scenario: ScenarioName;
  speedup: number;
  load: number;
  policies: string[];
  host: string;
  proxyPort: number;
  metricsPort: number;
  extProcPort: number;
}

export const DEMO_DEFAULTS: DemoOptions = {
  durationSec: 60,
  scenario: 'mixed',
  speedup: 2,
  load: 0.75,
  policies: ['round_robin', 'power_of_two', 'least_load'],
  host: '127.0.0.1',
  proxyPort: 0,
  metricsPort: 0,
  extProcPort: 0,
};

interface PhaseResult {
  policy: string;
  summary: LoadSummary;
  preemptions: number;
}

const out = (line = ''): void => void process.stdout.write(`${line}\n`);

function table(rows: PhaseResult[]): void {
  const f = (x: number, w = 9) => (Number.isFinite(x) ? x.toFixed(0) : '-').padStart(w);
  out(
    `${'policy'.padEnd(26)}${'requests'.padStart(9)}${'errors'.padStart(7)}${'TTFT p50'.padStart(9)}${'p90'.padStart(9)}${'p99'.padStart(9)}${'e2e p99'.padStart(9)}${'preempt'.padStart(9)}  share per worker`,
  );
  for (const r of rows) {
    const s = r.summary;
    const share = Object.entries(s.share)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k} ${(v * 100).toFixed(0)}%`)
      .join(', ');
    out(
      `${r.policy.padEnd(26)}${f(s.requests)}${f(s.errors, 7)}${f(s.ttftMs.p50)}${f(s.ttftMs.p90)}${f(s.ttftMs.p99)}${f(s.e2eMs.p99)}${f(r.preemptions)}  ${share}`,
    );
  }
}

/**
 * `least-load-router demo` (what `npm start` runs): a simulated heterogeneous fleet behind the real
 * gateway (proxy, ext_proc, metrics), the same seeded workload through each policy in turn, and a
 * TTFT table at the end. The gateway's URLs stay the same across phases, so a user can curl them
 * while it runs; each phase gets a fresh fleet, swapped in with a live config reload.
 */
export async function demo(o: DemoOptions): Promise<number> {
  const abort = new AbortController();
  setMaxListeners(0, abort.signal); // every in-flight request of the load generator listens to it
  const onSignal = () => {
    if (abort.signal.aborted) process.exit(130);
    out('\ninterrupted: stopping (Ctrl-C again to quit at once)');
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const phaseSecs = o.durationSec / o.policies.length;
  const pollSecs = 1 / o.speedup; // one model second
  const base = {
    host: o.host,
    poller: { intervalSecs: pollSecs, timeoutMs: Math.max(100, 1000 / o.speedup) },
    log: { level: 'silent' as const },
  };
  let fleet: SimFleet = await startFleet(o.scenario, { speedup: o.speedup, host: o.host });
  const gateway = new Gateway(
    validateConfig({ ...base, workers: fleet.urls.map((url) => ({ url })), policy: o.policies[0] }),
  );
  const agent = new Agent({ keepAlive: true, maxSockets: 4096 });
  const results: PhaseResult[] = [];
  try {
    await gateway.start();
    const proxy = await gateway.startProxy(o.proxyPort);
    const status = await gateway.startStatus(o.metricsPort);
    const extProc = await gateway.startExtProc(o.extProcPort);
    const proxyUrl = `http://${o.host}:${proxy.port}`;
    const statusUrl = `http://${o.host}:${status.port}`;
    const capacity = scenarioCapacity(o.scenario, 1);
    const rate = capacity * o.load;
    out(
      `least-load-router demo: simulated "${o.scenario}" fleet (${fleet.workers.map((w) => w.name).join(', ')})`,
    );
    out(
      `model time runs ${o.speedup}x faster than the clock; offered load ${rate.toFixed(1)} req/s (model) = ${(o.load * 100).toFixed(0)}% of the fleet's ${capacity.toFixed(1)} req/s capacity`,
    );
    out(`\nwhile it runs, try:`);
    out(
      `  curl -N ${proxyUrl}/v1/chat/completions -H 'content-type: application/json' -d '{"model":"sim","messages":[{"role":"user","content":"hello"}],"max_tokens":32,"stream":true}'`,
    );
    out(`  curl ${statusUrl}/workers`);
    out(`  curl ${statusUrl}/metrics`);
    out(`  Envoy ext_proc (gRPC) on ${o.host}:${extProc.port}: examples/envoy shows the Envoy side`);
    out('');

    for (const [i, policy] of o.policies.entries()) {
      if (abort.signal.aborted) break;
      if (i > 0) {
        const old = fleet;
        fleet = await startFleet(o.scenario, { speedup: o.speedup, host: o.host });
        gateway.reload(validateConfig({ ...base, workers: fleet.urls.map((url) => ({ url })), policy }));
        await old.close();
      }
      await waitForFirstPolls(gateway.router, 10_000, abort.signal); // a worker still unpolled just starts cold
      out(`phase ${i + 1}/${o.policies.length}: ${policy} for ${phaseSecs.toFixed(0)} s ...`);
      const workload = createWorkload({ seed: 1, ratePerSec: rate, durationSec: phaseSecs * o.speedup });
      const r = await runLoad({
        target: proxyUrl,
        workload,
        timeScale: o.speedup,
        agent,
        signal: abort.signal,
      });
      const preemptions = fleet.workers.reduce((a, w) => a + w.stats().preemptions, 0);
      results.push({ policy: describe(gateway.config.policy), summary: r.summary, preemptions });
      out(
        `  TTFT p50 ${r.summary.ttftMs.p50.toFixed(0)} ms, p99 ${r.summary.ttftMs.p99.toFixed(0)} ms, ${r.summary.errors} errors`,
      );
    }
    if (results.length > 0) {
      out(`\nsame seeded workload per policy; times in model ms:\n`);
      table(results);
      out("\nleast_load scores in_flight + lambda * k / (1 - k) from each worker's polled KV usage;");
      out(
        'run `npm run bench:policies` for the full comparison (more seeds, fleets, an oracle, poll intervals).',
      );
    }
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    agent.destroy();
    await gateway.shutdown(abort.signal.aborted ? 0 : 5000);
    await fleet.close();
  }
}

function describe(policy: PolicyConfig): string {
  const mode = 'mode' in policy && policy.mode && policy.mode !== 'seed' ? ` ${policy.mode}` : '';
  return `${policy.name}${mode}`;
}
