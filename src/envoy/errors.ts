import { LlrError } from '../core/errors.js';

/** The ext_proc gRPC server could not listen (port taken, bad address, ...). */
export class ExtProcListenError extends LlrError {
  constructor(address: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super('LLR_EXT_PROC_LISTEN', `ext_proc server cannot listen on ${address}: ${reason}`, { cause });
  }
}
