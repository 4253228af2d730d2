import { startFleet } from '../sim/fleet.js';
import type { ScenarioName } from '../sim/scenarios.js';

/**
 * `least-load-router sim`: a simulated fleet on local ports, serving the OpenAI API and SGLang- or
 * vLLM-style load endpoints, until Ctrl-C. Workers for trying the router, the Express example or
 * an Envoy setup without GPUs.
 */
export async function simFleet(scenario: ScenarioName, speedup: number): Promise<number> {
  const fleet = await startFleet(scenario, { speedup, host: '127.0.0.1' });
  for (const w of fleet.workers)
    process.stdout.write(`${w.name.padEnd(12)} ${w.url}  (${w.loadFormat} load format)\n`);
  process.stdout.write(`\nWORKERS=${fleet.urls.join(',')}\n`);
  process.stdout.write(
    `least-load-router serve ${fleet.urls.map((u) => `--worker ${u}`).join(' ')} --proxy-port 8080\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await fleet.close();
  return 0;
}
