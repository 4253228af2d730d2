import type { Url } from 'node:url';
import type { Worker } from '../core/worker.js';

/** The shape http-proxy reads its target from (it joins `path` with the request path). */
export type ProxyTarget = Partial<Url>;

const bases = new WeakMap<Worker, ProxyTarget>();

function base(worker: Worker): ProxyTarget {
  const protocol = worker.url.startsWith('https:') ? 'https:' : 'http:';
  const origin = `${protocol}//${worker.host}:${worker.port}`;
  return {
    protocol,
    // Connect without IPv6 brackets; the host header keeps them.
    hostname: worker.host.replace(/^\[(.*)\]$/, '$1'),
    host: `${worker.host}:${worker.port}`,
    port: String(worker.port),
    path: worker.url.slice(origin.length),
  };
}

/**
 * A fresh target object per attempt: http-proxy hands it back with every error, so its identity
 * tells a late error from an abandoned attempt apart from one about the current attempt.
 */
export function proxyTarget(worker: Worker): ProxyTarget {
  let b = bases.get(worker);
  if (b === undefined) {
    b = base(worker);
    bases.set(worker, b);
  }
  return { ...b };
}
