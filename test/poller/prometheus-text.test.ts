import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRng } from '../../src/core/random.js';
import { PrometheusParseError } from '../../src/poller/errors.js';
import { parsePrometheusText, type PromSample } from '../../src/poller/prometheus-text.js';
import { makeVllmMetrics } from '../fixtures/make-vllm-metrics.js';
import { fixture } from './helpers.js';

const plain = (s: PromSample | undefined) => s && { ...s, labels: { ...s.labels } };

const TEXT_FIXTURES = [
  'vllm-metrics-v1.txt',
  'vllm-metrics-v0.txt',
  'sglang-metrics.txt',
  'sglang-metrics-dp.txt',
  'llamacpp-metrics.txt',
  'trtllm-serve-metrics.txt',
  'trtllm-triton-metrics.txt',
  'tgi-metrics.txt',
];

test('every fixture parses; every sample line becomes one sample', () => {
  for (const name of TEXT_FIXTURES) {
    const text = fixture(name);
    const sampleLines = text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#')).length;
    assert.equal(parsePrometheusText(text).size, sampleLines, name);
  }
});

test('vLLM v1: colon names, engine labels, _created lines, declared types', () => {
  const doc = parsePrometheusText(fixture('vllm-metrics-v1.txt'));
  assert.deepEqual(
    doc.get('vllm:kv_cache_usage_perc').map((s) => [s.labels.engine, s.value]),
    [
      ['0', 0.4875],
      ['1', 0.2031],
    ],
  );
  assert.equal(doc.get('vllm:num_preemptions_created')[0]?.value, 1.788184174e9);
  assert.equal(doc.types.get('vllm:num_requests_running'), 'gauge');
  assert.equal(doc.types.get('vllm:generation_tokens_total'), 'counter');
  const lora = doc.get('vllm:lora_requests_info')[0];
  assert.equal(lora?.labels.running_lora_adapters, 'sql-lora,chat-lora');
  assert.equal(lora?.labels.waiting_lora_adapters, '');
  assert.deepEqual(doc.get('nope'), []);
});

test('escapes in label values: \\\\, \\" and \\n; commas and braces inside quotes', () => {
  const doc = parsePrometheusText('m{path="C:\\\\dir",q="say \\"hi\\"",nl="a\\nb",odd="{x,y}=1 2"} 3\n');
  assert.deepEqual(plain(doc.get('m')[0]), {
    name: 'm',
    labels: { path: 'C:\\dir', q: 'say "hi"', nl: 'a\nb', odd: '{x,y}=1 2' },
    value: 3,
    timestampMs: undefined,
  });
});

test('NaN, +Inf, -Inf and other float spellings; optional timestamps', () => {
  const doc = parsePrometheusText(
    [
      'a NaN',
      'b +Inf',
      'c -Inf',
      'd 1.5e3 1700000000000',
      'e -0.25 -5',
      'f Inf',
      'g 0x10',
      'h{le="+Inf"} 7',
      'i .5',
    ].join('\n'),
  );
  assert.ok(Number.isNaN(doc.get('a')[0]?.value));
  assert.equal(doc.get('b')[0]?.value, Infinity);
  assert.equal(doc.get('c')[0]?.value, -Infinity);
  assert.deepEqual([doc.get('d')[0]?.value, doc.get('d')[0]?.timestampMs], [1500, 1700000000000]);
  assert.deepEqual([doc.get('e')[0]?.value, doc.get('e')[0]?.timestampMs], [-0.25, -5]);
  assert.equal(doc.get('f')[0]?.value, Infinity);
  assert.equal(doc.get('g')[0]?.value, 16);
  assert.equal(doc.get('h')[0]?.labels.le, '+Inf');
  assert.equal(doc.get('i')[0]?.value, 0.5);
  assert.equal(doc.get('a')[0]?.timestampMs, undefined);
});

test('comments, blank lines, CRLF, tabs, trailing commas, no final newline', () => {
  const text = [
    '# just a comment',
    '#no space',
    '',
    '   ',
    '# HELP x Some help with "quotes" and \\ backslash',
    '# TYPE x gauge',
    'x{a="1",} 1',
    '\tx{ a = "2" , b="3" }\t2  ',
    'y{} 4',
    '# EOF',
  ].join('\r\n');
  const doc = parsePrometheusText(`${text}\r\nz 5`);
  assert.deepEqual(
    doc.get('x').map((s) => [{ ...s.labels }, s.value]),
    [
      [{ a: '1' }, 1],
      [{ a: '2', b: '3' }, 2],
    ],
  );
  assert.equal(doc.get('y')[0]?.value, 4);
  assert.equal(doc.get('z')[0]?.value, 5);
  assert.equal(doc.types.get('x'), 'gauge');
  assert.equal(parsePrometheusText('').size, 0);
  assert.equal(parsePrometheusText('\n\n\r\n').size, 0);
});

test('OpenMetrics exemplars after the value are ignored', () => {
  const doc = parsePrometheusText(
    'r_bucket{le="1"} 3 # {trace_id="abc"} 0.5 1700000000\nr_total 4 1000 # {a="b"} 1\n',
  );
  assert.equal(doc.get('r_bucket')[0]?.value, 3);
  assert.deepEqual([doc.get('r_total')[0]?.value, doc.get('r_total')[0]?.timestampMs], [4, 1000]);
});

test('a label called __proto__ is just a label', () => {
  const s = parsePrometheusText('m{__proto__="x",constructor="y"} 1').get('m')[0];
  assert.equal(s?.labels.__proto__, 'x');
  assert.equal(s?.labels.constructor, 'y');
  assert.deepEqual(Object.keys(s?.labels ?? {}), ['__proto__', 'constructor']);
});

test('garbage is a PrometheusParseError naming the line', () => {
  const cases: [string, RegExp][] = [
    ['ok 1\nbad', /line 2: missing value/],
    ['1abc 2', /line 1: expected a metric name/],
    ['m{a="1" 2', /expected ','/],
    ['m{a="1"', /unterminated label set/],
    ['m{a="1', /unterminated label value/],
    ['m{a=1} 2', /expected '"'/],
    ['m{a"1"} 2', /expected '='/],
    ['m{1a="x"} 2', /expected a label name/],
    ['m{a:b="x"} 2', /expected '='/],
    ['m{a="\\t"} 1', /invalid escape/],
    ['m{a="x",a="y"} 1', /duplicate label a/],
    ['m one', /invalid value "one"/],
    ['m 1 notatime', /invalid timestamp/],
    ['m 1 2 3', /unexpected text after the timestamp/],
    ['m-x 1', /invalid character in the metric name/],
    ['m', /missing value/],
    ['m{}', /missing value/],
    ['# TYPE m wobble', /unknown metric type "wobble"/],
    ['# TYPE 9m gauge', /without a valid metric name/],
    ['# HELP m-x help', /invalid character/],
  ];
  for (const [text, message] of cases) {
    assert.throws(
      () => parsePrometheusText(text),
      (err: unknown) =>
        err instanceof PrometheusParseError &&
        err.code === 'LLR_PROMETHEUS_PARSE' &&
        message.test(err.message),
      text,
    );
  }
});

test('`only` keeps the named samples and skips the rest unchecked', () => {
  const text = `${fixture('vllm-metrics-v1.txt')}garbage{ here\n`;
  assert.throws(() => parsePrometheusText(text), PrometheusParseError);
  const doc = parsePrometheusText(text, { only: (n) => n === 'vllm:num_requests_running' });
  assert.deepEqual([...doc.names()], ['vllm:num_requests_running']);
  assert.equal(doc.size, 2);
});

test('a ~200 KB vLLM page with histograms parses completely, labelled buckets included', () => {
  const text = makeVllmMetrics({ engines: 8 });
  assert.ok(text.length > 180_000, `page is ${text.length} bytes`);
  const doc = parsePrometheusText(text);
  const buckets = doc.get('vllm:time_to_first_token_seconds_bucket');
  assert.equal(buckets.length, 8 * 20);
  assert.equal(buckets.filter((b) => b.labels.le === '+Inf').length, 8);
  assert.equal(doc.get('vllm:kv_cache_usage_perc').length, 8);
  assert.equal(doc.types.get('vllm:e2e_request_latency_seconds'), 'histogram');
});

// ---- fuzzing: whatever the input, the parser returns or throws PrometheusParseError, and finishes.

function parsesOrParseError(text: string, tally: { ok: number; failed: number }): void {
  try {
    const doc = parsePrometheusText(text);
    for (const name of doc.names()) {
      for (const s of doc.get(name)) {
        assert.equal(typeof s.value, 'number');
        for (const v of Object.values(s.labels)) assert.equal(typeof v, 'string');
      }
    }
    tally.ok += 1;
  } catch (err) {
    if (!(err instanceof PrometheusParseError)) {
      assert.fail(`non-parse error ${String(err)} for input ${JSON.stringify(text.slice(0, 200))}`);
    }
    tally.failed += 1;
  }
}

test('fuzz: seeded random garbage from the grammar alphabet', () => {
  const rng = seededRng(20260914);
  const alphabet = [
    'a',
    'z',
    '_',
    ':',
    '{',
    '}',
    '=',
    '"',
    '\\',
    ',',
    '\n',
    '\r',
    '\t',
    ' ',
    '#',
    '+',
    '-',
    '.',
    'e',
    '0',
    '9',
    'NaN',
    'Inf',
    'TYPE',
    'HELP',
    '\u00e9',
    '\u0000',
    '\ud83d',
  ];
  const tally = { ok: 0, failed: 0 };
  for (let i = 0; i < 4000; i++) {
    let text = '';
    const len = Math.floor(rng() * 120);
    for (let j = 0; j < len; j++) text += alphabet[Math.floor(rng() * alphabet.length)];
    parsesOrParseError(text, tally);
  }
  assert.ok(tally.ok > 0 && tally.failed > 0, JSON.stringify(tally));
});

test('fuzz: mutated fixtures (insert, delete, replace, truncate)', () => {
  const rng = seededRng(7);
  const pool = '{}="\\,\n# \t+-.eE0aZ_:';
  const tally = { ok: 0, failed: 0 };
  for (const name of TEXT_FIXTURES) {
    const original = fixture(name);
    for (let i = 0; i < 400; i++) {
      let text = original;
      const edits = 1 + Math.floor(rng() * 4);
      for (let e = 0; e < edits; e++) {
        const at = Math.floor(rng() * (text.length + 1));
        const ch = pool[Math.floor(rng() * pool.length)] ?? '';
        const op = Math.floor(rng() * 4);
        if (op === 0) text = text.slice(0, at) + ch + text.slice(at);
        else if (op === 1) text = text.slice(0, at) + text.slice(at + 1);
        else if (op === 2) text = text.slice(0, at) + ch + text.slice(at + 1);
        else text = text.slice(0, at);
      }
      parsesOrParseError(text, tally);
    }
  }
  assert.ok(tally.ok > 100 && tally.failed > 100, JSON.stringify(tally));
});

test('pathological inputs finish (linear scan, no backtracking)', () => {
  const tally = { ok: 0, failed: 0 };
  for (const text of [
    '{'.repeat(200_000),
    'a'.repeat(200_000),
    `m{a="${'\\"'.repeat(100_000)}`,
    `m{${'a="b",'.repeat(50_000)}} 1`,
    '\n'.repeat(200_000),
    `# ${'x '.repeat(100_000)}`,
    `m ${'9'.repeat(100_000)}`,
  ]) {
    parsesOrParseError(text, tally);
  }
  assert.equal(tally.ok + tally.failed, 7);
});
