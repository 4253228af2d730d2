import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * A new id per process start: host and pid say where a replica runs (for whoever reads Redis), the
 * random part makes a restart a new replica, so it starts clean instead of inheriting the counts
 * its previous life left behind (those expire on their own).
 */
export function newReplicaId(): string {
  const host = hostname().replace(/[^A-Za-z0-9.-]/g, '_') || 'host';
  return `${host}-${process.pid}-${randomBytes(4).toString('hex')}`;
}
