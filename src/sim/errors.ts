import { LlrError } from '../core/errors.js';

/** A simulated worker or fleet was described with impossible parameters. */
export class SimConfigError extends LlrError {
  constructor(message: string) {
    super('LLR_SIM_CONFIG', message);
  }
}

/** A request the simulated engine refuses, e.g. longer than its context; maps to HTTP 400. */
export class SimRequestError extends LlrError {
  constructor(message: string) {
    super('LLR_SIM_BAD_REQUEST', message);
  }
}
