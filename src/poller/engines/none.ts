import type { LoadSource, ReadContext } from '../engine.js';
import { PollRequestError } from '../errors.js';

export const HEALTH_PATH = '/health';

/**
 * No load endpoint: only whether the server answers. Any answer below 500 counts as alive (a
 * server without a /health route still answers 404); the snapshot stays unknown.
 */
export class HealthOnlySource implements LoadSource {
  readonly engine = 'none' as const;

  async read(ctx: ReadContext): Promise<undefined> {
    const res = await ctx.get(HEALTH_PATH);
    if (res.status >= 500) {
      throw new PollRequestError('http_error', `GET ${HEALTH_PATH} answered ${res.status}`, {
        status: res.status,
      });
    }
    return undefined;
  }
}
