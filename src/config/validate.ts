import type { z } from 'zod';
import { ConfigError } from '../core/errors.js';
import { configSchema, type Config } from './schema.js';

function show(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (value === undefined) return 'nothing';
  try {
    const text = JSON.stringify(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return String(value);
  }
}

function describe(issue: z.core.$ZodIssue): { field: string; message: string } {
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    return { field: path ? `${path}.${key}` : key, message: 'unknown key' };
  }
  let input = 'input' in issue ? issue.input : undefined;
  // A discriminator issue reports the whole object; the user wants to see the offending value.
  const last = issue.path[issue.path.length - 1];
  if (input && typeof input === 'object' && last !== undefined && last in input) {
    input = (input as Record<PropertyKey, unknown>)[last];
  }
  const got = issue.code === 'invalid_type' && input === undefined ? 'nothing' : show(input);
  return { field: path, message: `${issue.message}, got ${got}` };
}

/**
 * Parses with `schema`; the first problem becomes a ConfigError naming the field (under `root`),
 * the value and the reason.
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, root = ''): z.output<S> {
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  const issues = result.error.issues.map(describe).map(({ field, message }) => ({
    field: root && field ? `${root}.${field}` : root || field,
    message,
  }));
  const first = issues[0] ?? { field: root, message: 'invalid configuration' };
  throw new ConfigError(first.field, first.message);
}

/** Validates a whole config document. */
export function validateConfig(input: unknown): Config {
  return parseOrThrow(configSchema, input ?? {});
}

/** The defaults, as the schema defines them. */
export const DEFAULT_CONFIG: Config = configSchema.parse({});
