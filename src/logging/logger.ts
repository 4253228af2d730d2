import {
  destination as pinoDestination,
  pino,
  type DestinationStream,
  type Logger as PinoLogger,
} from 'pino';

/** The slice of a logger the rest of the code uses, so tests and embedders can pass their own. */
export interface Logger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Structured JSON lines on stderr (stdout stays free for command output such as --print-config). */
export function createLogger(level: LogLevel = 'info', destination?: DestinationStream): PinoLogger {
  return pino(
    { name: 'least-load-router', level, base: { pid: process.pid } },
    destination ?? pinoDestination({ fd: 2, sync: false }),
  );
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
