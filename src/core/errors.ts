/**
 * Every failure we raise carries a stable `code` so callers (and log pipelines) can branch on it
 * without parsing messages, in the style of undici's lib/core/errors.js.
 */
export class LlrError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

export class ConfigError extends LlrError {
  /** Dotted path of the offending field, e.g. `policy.lambda`; empty for the whole document. */
  readonly field: string;

  constructor(field: string, message: string, options?: { cause?: unknown }) {
    super('LLR_CONFIG', field ? `${field}: ${message}` : message, options);
    this.field = field;
  }
}

export class NoHealthyWorkerError extends LlrError {
  constructor(message = 'no healthy worker is available') {
    super('LLR_NO_HEALTHY_WORKER', message);
  }
}

export class InvalidWorkerUrlError extends LlrError {
  constructor(url: string, reason: string) {
    super('LLR_INVALID_WORKER_URL', `invalid worker URL ${JSON.stringify(url)}: ${reason}`);
  }
}

export class DuplicateWorkerError extends LlrError {
  constructor(id: string) {
    super('LLR_DUPLICATE_WORKER', `worker ${id} is already in the pool`);
  }
}

export class UnknownWorkerError extends LlrError {
  constructor(id: string) {
    super('LLR_UNKNOWN_WORKER', `no worker with id ${id}`);
  }
}

export class UnknownPolicyError extends LlrError {
  constructor(name: string, known: readonly string[]) {
    super(
      'LLR_UNKNOWN_POLICY',
      `unknown policy ${JSON.stringify(name)}; valid policies: ${known.join(', ')}`,
    );
  }
}

export class UnknownModelError extends LlrError {
  constructor(model: string) {
    super('LLR_UNKNOWN_MODEL', `no worker serves model ${JSON.stringify(model)}`);
  }
}
