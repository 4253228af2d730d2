import { PrometheusParseError } from './errors.js';

/**
 * Our own parser for the Prometheus text exposition format (0.0.4, plus the OpenMetrics bits
 * engines emit: `# EOF`, exemplars, `_created` series). We do not use an npm package: the popular
 * one drops labelled histogram series and another rejects `:` in names, and vLLM/SGLang need both.
 *
 * One linear pass over char codes with no regular expressions and no backtracking, so garbage
 * cannot make it hang, and a 200 KB vLLM /metrics parses in a few milliseconds. Every failure is a
 * PrometheusParseError naming the line.
 */

export interface PromSample {
  /** The sample's own name, e.g. `vllm:e2e_request_latency_seconds_bucket`. */
  readonly name: string;
  /** Null-prototype object, so a label called `__proto__` is just a label. */
  readonly labels: Readonly<Record<string, string>>;
  /** May be NaN or +-Infinity: the format allows them, callers decide what they mean. */
  readonly value: number;
  readonly timestampMs: number | undefined;
}

export interface PromParseOptions {
  /**
   * Keeps only samples whose name passes; other sample lines are skipped after their name is read
   * (their labels and value are not checked). Adapters use it to read a few gauges cheaply.
   */
  only?: (name: string) => boolean;
}

const NO_SAMPLES: readonly PromSample[] = Object.freeze([]);
const NO_LABELS: Readonly<Record<string, string>> = Object.freeze(
  Object.create(null) as Record<string, string>,
);

const METRIC_TYPES = new Set([
  'counter',
  'gauge',
  'histogram',
  'summary',
  'untyped',
  'unknown',
  'info',
  'stateset',
  'gaugehistogram',
]);

/** A parsed exposition: samples grouped by sample name, plus the declared family types. */
export class PromDocument {
  /** Family name to declared type (`# TYPE` lines). */
  readonly types: ReadonlyMap<string, string>;
  readonly #samples: ReadonlyMap<string, PromSample[]>;

  constructor(samples: ReadonlyMap<string, PromSample[]>, types: ReadonlyMap<string, string>) {
    this.#samples = samples;
    this.types = types;
  }

  /** Every sample with exactly this name, in document order; empty when absent. */
  get(name: string): readonly PromSample[] {
    return this.#samples.get(name) ?? NO_SAMPLES;
  }

  has(name: string): boolean {
    return this.#samples.has(name);
  }

  /** Distinct sample names, in order of first appearance. */
  names(): IterableIterator<string> {
    return this.#samples.keys();
  }

  /** Number of samples kept. */
  get size(): number {
    let n = 0;
    for (const list of this.#samples.values()) n += list.length;
    return n;
  }
}

const SPACE = 32;
const TAB = 9;
const HASH = 35;
const QUOTE = 34;
const BACKSLASH = 92;
const OPEN = 123;
const CLOSE = 125;
const COMMA = 44;
const EQUALS = 61;

function isBlank(c: number): boolean {
  return c === SPACE || c === TAB;
}

// [a-zA-Z_:] / [a-zA-Z0-9_:] for metric names; label names are the same without ':'.
function isNameStart(c: number, colon: boolean): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || (colon && c === 58);
}

function isNameChar(c: number, colon: boolean): boolean {
  return isNameStart(c, colon) || (c >= 48 && c <= 57);
}

/** Parses a sample value the way Prometheus does (Go ParseFloat plus the NaN/Inf spellings). */
function parseFloatToken(token: string): number | undefined {
  const v = Number(token);
  if (v === v) return v;
  switch (token.toLowerCase()) {
    case 'nan':
    case '+nan':
    case '-nan':
      return NaN;
    case 'inf':
    case '+inf':
    case 'infinity':
    case '+infinity':
      return Infinity;
    case '-inf':
    case '-infinity':
      return -Infinity;
    default:
      return undefined;
  }
}

class LineParser {
  readonly #text: string;
  readonly #only: ((name: string) => boolean) | undefined;
  readonly samples = new Map<string, PromSample[]>();
  readonly types = new Map<string, string>();
  #pos = 0;
  #end = 0;
  #line = 0;

  constructor(text: string, only: ((name: string) => boolean) | undefined) {
    this.#text = text;
    this.#only = only;
  }

  run(): void {
    const text = this.#text;
    const n = text.length;
    let start = 0;
    while (start < n) {
      let next = text.indexOf('\n', start);
      if (next === -1) next = n;
      let end = next;
      if (end > start && text.charCodeAt(end - 1) === 13) end -= 1;
      this.#line += 1;
      this.#pos = start;
      this.#end = end;
      this.#parseLine();
      start = next + 1;
    }
  }

  #fail(reason: string): never {
    throw new PrometheusParseError(this.#line, reason);
  }

  #skipBlanks(): number {
    const start = this.#pos;
    while (this.#pos < this.#end && isBlank(this.#text.charCodeAt(this.#pos))) this.#pos += 1;
    return this.#pos - start;
  }

  #peek(): number {
    return this.#pos < this.#end ? this.#text.charCodeAt(this.#pos) : -1;
  }

  #readName(colon: boolean): string {
    const start = this.#pos;
    if (!isNameStart(this.#peek(), colon)) return '';
    this.#pos += 1;
    while (this.#pos < this.#end && isNameChar(this.#text.charCodeAt(this.#pos), colon)) this.#pos += 1;
    return this.#text.slice(start, this.#pos);
  }

  #readToken(): string {
    const start = this.#pos;
    while (this.#pos < this.#end && !isBlank(this.#text.charCodeAt(this.#pos))) this.#pos += 1;
    return this.#text.slice(start, this.#pos);
  }

  #parseLine(): void {
    this.#skipBlanks();
    const c = this.#peek();
    if (c === -1) return;
    if (c === HASH) return this.#parseComment();
    const name = this.#readName(true);
    if (name === '') this.#fail('expected a metric name');
    if (this.#only !== undefined && !this.#only(name)) return;
    let labels = NO_LABELS;
    if (this.#peek() === OPEN) {
      this.#pos += 1;
      labels = this.#parseLabels();
      this.#skipBlanks();
    } else if (this.#skipBlanks() === 0) {
      this.#fail(this.#pos < this.#end ? 'invalid character in the metric name' : 'missing value');
    }
    const valueToken = this.#readToken();
    if (valueToken === '') this.#fail('missing value');
    const value = parseFloatToken(valueToken);
    if (value === undefined) this.#fail(`invalid value ${JSON.stringify(valueToken.slice(0, 40))}`);
    let timestampMs: number | undefined;
    this.#skipBlanks();
    if (this.#pos < this.#end && this.#peek() !== HASH) {
      const token = this.#readToken();
      const ts = Number(token);
      if (!Number.isFinite(ts)) this.#fail(`invalid timestamp ${JSON.stringify(token.slice(0, 40))}`);
      timestampMs = ts;
      this.#skipBlanks();
      // Anything after the timestamp must be an OpenMetrics exemplar (`# {...} v`), which we ignore.
      if (this.#pos < this.#end && this.#peek() !== HASH) this.#fail('unexpected text after the timestamp');
    }
    const sample: PromSample = { name, labels, value, timestampMs };
    const list = this.samples.get(name);
    if (list === undefined) this.samples.set(name, [sample]);
    else list.push(sample);
  }

  #parseComment(): void {
    this.#pos += 1;
    this.#skipBlanks();
    const keyword = this.#readToken();
    if (keyword !== 'TYPE' && keyword !== 'HELP') return;
    this.#skipBlanks();
    const name = this.#readName(true);
    if (name === '') this.#fail(`# ${keyword} without a valid metric name`);
    const afterName = this.#peek();
    if (afterName !== -1 && !isBlank(afterName)) this.#fail(`invalid character in the # ${keyword} name`);
    if (keyword === 'HELP') return;
    this.#skipBlanks();
    const type = this.#readToken();
    if (!METRIC_TYPES.has(type)) this.#fail(`unknown metric type ${JSON.stringify(type.slice(0, 40))}`);
    this.types.set(name, type);
  }

  #parseLabels(): Record<string, string> {
    const labels = Object.create(null) as Record<string, string>;
    for (;;) {
      this.#skipBlanks();
      if (this.#peek() === CLOSE) {
        this.#pos += 1;
        return labels;
      }
      const name = this.#readName(false);
      if (name === '') this.#fail(this.#pos < this.#end ? 'expected a label name' : 'unterminated label set');
      this.#skipBlanks();
      if (this.#peek() !== EQUALS) this.#fail(`expected '=' after label ${name}`);
      this.#pos += 1;
      this.#skipBlanks();
      if (this.#peek() !== QUOTE) this.#fail(`expected '"' to open the value of label ${name}`);
      this.#pos += 1;
      const value = this.#readLabelValue();
      if (name in labels) this.#fail(`duplicate label ${name}`);
      labels[name] = value;
      this.#skipBlanks();
      const c = this.#peek();
      if (c === COMMA) this.#pos += 1;
      else if (c !== CLOSE)
        this.#fail(c === -1 ? 'unterminated label set' : "expected ',' or '}' after a label");
    }
  }

  /** Reads up to and past the closing quote; only \\, \" and \n are valid escapes. */
  #readLabelValue(): string {
    const text = this.#text;
    const start = this.#pos;
    let i = start;
    let out: string | undefined;
    let chunkStart = start;
    while (i < this.#end) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        this.#pos = i + 1;
        return out === undefined ? text.slice(start, i) : out + text.slice(chunkStart, i);
      }
      if (c === BACKSLASH) {
        const e = i + 1 < this.#end ? text.charCodeAt(i + 1) : -1;
        let decoded: string;
        if (e === BACKSLASH) decoded = '\\';
        else if (e === QUOTE) decoded = '"';
        else if (e === 110) decoded = '\n';
        else {
          this.#pos = i;
          this.#fail('invalid escape in a label value (only \\\\, \\" and \\n are allowed)');
        }
        out = (out ?? '') + text.slice(chunkStart, i) + decoded;
        i += 2;
        chunkStart = i;
        continue;
      }
      i += 1;
    }
    this.#pos = this.#end;
    this.#fail('unterminated label value');
  }
}

/** Parses a whole exposition; throws PrometheusParseError (and nothing else) on malformed input. */
export function parsePrometheusText(text: string, options: PromParseOptions = {}): PromDocument {
  const parser = new LineParser(text, options.only);
  parser.run();
  return new PromDocument(parser.samples, parser.types);
}
