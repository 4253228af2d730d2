import { LoadParseError } from '../errors.js';

/**
 * Checks for values an engine reports. Missing (undefined or null) stays undefined: unknown, not 0.
 * A value that is present but impossible (NaN, a negative count, a usage above 1, a string) makes
 * the whole payload untrustworthy, so it throws LoadParseError.
 */

export type ValueKind = 'ratio' | 'count' | 'rate';

// Float noise from engines computing 1 - free/total is tolerated and clamped, not rejected.
const RATIO_SLACK = 1e-6;

function show(value: unknown): string {
  if (typeof value === 'number') return String(value);
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.length > 40 ? `${text.slice(0, 37)}...` : text;
  } catch {
    return typeof value;
  }
}

export function checkValue(value: unknown, kind: ValueKind, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new LoadParseError(`${field} must be a finite number >= 0, got ${show(value)}`);
  }
  if (kind === 'ratio') {
    if (value > 1 + RATIO_SLACK) throw new LoadParseError(`${field} must be in 0..1, got ${show(value)}`);
    return value > 1 ? 1 : value;
  }
  return value;
}

/** Parses JSON, turning a syntax error into LoadParseError. */
export function parseJson(body: string, what: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch (err) {
    throw new LoadParseError(`${what} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
