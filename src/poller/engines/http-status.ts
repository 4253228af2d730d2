import type { LimitedResponse } from '../fetch-limited.js';
import { PollRequestError } from '../errors.js';

/** The server says this endpoint does not exist here (as opposed to failing to serve it). */
export function isAbsent(status: number): boolean {
  return status === 404 || status === 405 || status === 501;
}

export function isOk(status: number): boolean {
  return status >= 200 && status < 300;
}

/** Returns the body of a 2xx answer; anything else is an `http_error` poll. */
export function okBody(res: LimitedResponse, path: string): string {
  if (!isOk(res.status)) {
    throw new PollRequestError('http_error', `GET ${path} answered ${res.status}`, { status: res.status });
  }
  return res.body;
}
