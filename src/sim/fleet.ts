import { SimConfigError } from './errors.js';
import { scenarioWorkers, type ScenarioName } from './scenarios.js';
import { type SimServer, type SimServerOptions, type SimWorkerSpec, startSimServer } from './sim-server.js';

/** A set of simulated workers started together (each on its own port) and stopped together. */
export interface SimFleet {
  readonly workers: readonly SimServer[];
  /** Base URLs, in the order of the specs. */
  readonly urls: readonly string[];
  readonly speedup: number;
  /** The worker with this name (the `x-sim-worker` value) or this `host:port` id. */
  get(nameOrId: string): SimServer | undefined;
  close(): Promise<void>;
}

/**
 * Starts one SimServer per spec (or per worker of a named scenario) on `options.host` (default
 * 127.0.0.1), port 0 each. If any fails to start, the ones already up are closed.
 */
export async function startFleet(
  specs: readonly SimWorkerSpec[] | ScenarioName,
  options: SimServerOptions = {},
): Promise<SimFleet> {
  const list = typeof specs === 'string' ? scenarioWorkers(specs) : specs;
  if (list.length === 0) throw new SimConfigError('a fleet needs at least one worker');
  const names = new Set(list.map((s) => s.name));
  if (names.size !== list.length) throw new SimConfigError('worker names in a fleet must be unique');
  const { port: _ignored, ...shared } = options;
  const settled = await Promise.allSettled(list.map((s) => startSimServer(s, shared)));
  const started = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(started.map((w) => w.close()));
    throw failed.reason;
  }
  const byKey = new Map<string, SimServer>();
  for (const w of started) {
    byKey.set(w.name, w);
    byKey.set(w.id, w);
  }
  let closing: Promise<void> | undefined;
  return {
    workers: started,
    urls: started.map((w) => w.url),
    speedup: started[0]!.speedup,
    get: (key) => byKey.get(key),
    close: () => (closing ??= Promise.all(started.map((w) => w.close())).then(() => undefined)),
  };
}
