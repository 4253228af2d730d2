// Spawned by load-poller.test.ts: polls a worker until one poll succeeds, stops the router and
// then simply returns. If stop() left a timer or socket behind, this process would not exit.
import { createRouter } from '../../src/router.js';

const url = process.argv[2];
if (!url) throw new Error('usage: exit-child.ts WORKER_URL');
const router = createRouter({ workers: [url], poller: { intervalSecs: 0.02, timeoutMs: 500 } });
await new Promise<void>((resolve) => {
  const unobserve = router.observe({
    onPoll: (_w, result) => {
      if (result !== 'ok') return;
      unobserve();
      resolve();
    },
  });
  void router.start();
});
// Another worker that is mid-poll (a server that never answers) must be cancelled by stop() too.
router.addWorker(process.argv[3] ?? url.replace(/:\d+$/, ':1'));
await router.stop();
process.stdout.write(`stopped ${router.workers()[0]?.engine}\n`);
