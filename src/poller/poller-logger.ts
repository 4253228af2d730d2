/** The slice of a logger the poller uses; a pino logger fits it. */
export interface PollerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The default: a library does not write to stderr unless asked to. */
export const silentPollerLogger: PollerLogger = { info() {}, warn() {} };
