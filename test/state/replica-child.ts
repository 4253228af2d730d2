// A router replica in its own process, for the crash test: it joins the shared state, takes
// `leases` picks without releasing them, prints its replica id once Redis has them, and then
// waits to be killed (SIGKILL: no clean leave, its share must expire on its own).
import { createRouter } from '../../src/router.js';

const [url, keyPrefix, ttl, leases, ...workers] = process.argv.slice(2);
const router = createRouter({
  workers: workers.map((w) => ({ url: w, engine: 'none' as const })),
  host: '127.0.0.1',
  state: { redis: { url: url!, keyPrefix: keyPrefix!, heartbeatTtlSecs: Number(ttl) } },
});
await router.start();
const held = Array.from({ length: Number(leases) }, () => router.pick());
if (!(await router.sharedState!.flush())) throw new Error('could not write to Redis');
process.stdout.write(`${JSON.stringify({ replica: router.sharedState!.replicaId, held: held.length })}\n`);
setInterval(() => {}, 1 << 30);
