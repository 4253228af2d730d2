import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../core/errors.js';
import type { Config } from './schema.js';
import { validateConfig } from './validate.js';

/** CLI flags as commander hands them over: raw strings, every one optional. */
export interface ConfigFlags {
  config?: string;
  worker?: string[];
  engine?: string;
  policy?: string;
  lambda?: string;
  pollInterval?: string;
  extProcPort?: string;
  proxyPort?: string;
  metricsPort?: string;
  host?: string;
}

type Doc = Record<string, unknown>;

const isObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Flags give numbers as text; keep anything unparsable as NaN so the schema reports it by field. */
const num = (text: string): number => (text.trim() === '' ? NaN : Number(text));

export async function readConfigFile(path: string): Promise<Doc> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError('', `cannot read config file ${path}: ${(err as Error).message}`, { cause: err });
  }
  let doc: unknown;
  try {
    doc = parseYaml(text); // YAML is a superset of JSON, so one parser reads both
  } catch (err) {
    throw new ConfigError('', `config file ${path} is not valid YAML or JSON: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (!isObject(doc)) throw new ConfigError('', `config file ${path} must hold a mapping at the top level`);
  return doc;
}

function section(doc: Doc, key: string): Doc {
  const current = doc[key];
  const copy = isObject(current) ? { ...current } : {};
  doc[key] = copy;
  return copy;
}

/** Lays flags over a config document; a flag always wins over the file. */
export function applyFlags(file: Doc, flags: ConfigFlags): Doc {
  const doc: Doc = { ...file };
  if (flags.worker && flags.worker.length > 0) {
    doc.workers = flags.worker.map((url) => (flags.engine ? { url, engine: flags.engine } : url));
  } else if (flags.engine && Array.isArray(doc.workers)) {
    doc.workers = doc.workers.map((w) => {
      const spec = typeof w === 'string' ? { url: w } : w;
      return isObject(spec) && spec.engine === undefined ? { ...spec, engine: flags.engine } : spec;
    });
  }
  if (flags.policy !== undefined || flags.lambda !== undefined) {
    const current =
      typeof doc.policy === 'string' ? { name: doc.policy } : isObject(doc.policy) ? doc.policy : {};
    // Switching policy by flag drops the file's parameters for the old one.
    const policy: Doc =
      flags.policy !== undefined && current.name !== flags.policy ? { name: flags.policy } : { ...current };
    if (policy.name === undefined) policy.name = 'least_load';
    if (flags.lambda !== undefined) {
      policy.lambda = num(flags.lambda);
      // --lambda is the seed formula's weight: asking for it asks for that formula.
      if (policy.mode === undefined) policy.mode = 'seed';
    }
    doc.policy = policy;
  }
  if (flags.pollInterval !== undefined) section(doc, 'poller').intervalSecs = num(flags.pollInterval);
  if (flags.extProcPort !== undefined) section(doc, 'envoy').port = num(flags.extProcPort);
  if (flags.proxyPort !== undefined) section(doc, 'proxy').port = num(flags.proxyPort);
  if (flags.metricsPort !== undefined) section(doc, 'metrics').port = num(flags.metricsPort);
  if (flags.host !== undefined) doc.host = flags.host;
  return doc;
}

/** File (if any) + flags, validated against the one schema. Throws ConfigError. */
export async function loadConfig(flags: ConfigFlags): Promise<Config> {
  const file = flags.config ? await readConfigFile(flags.config) : {};
  return validateConfig(applyFlags(file, flags));
}
