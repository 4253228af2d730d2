// No Envoy binary here, so the example configs are checked against Envoy's own API definitions
// (from @grpc/grpc-js-xds): every key must be a field of its message, every enum value must exist,
// every typed_config must name a real type, and the parts the router relies on must be as documented.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import type { PackageDefinition } from '@grpc/proto-loader';
import { parse } from 'yaml';
import { DEFAULT_CONFIG } from '../../src/config/validate.js';
import { EXT_PROC_SERVICE } from '../../src/envoy/proto-loader.js';
import { officialPackage } from './official-protos.js';

interface FieldDescriptor {
  name: string;
  jsonName: string;
  label: string;
  type: string;
  typeName: string;
}
interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType: MessageDescriptor[];
  enumType: { name: string; value: { name: string; number: number }[] }[];
  options: { mapEntry?: boolean } | null;
}
type Resolved =
  | { kind: 'message'; name: string; type: MessageDescriptor }
  | { kind: 'enum'; name: string; values: string[] };

const defs: PackageDefinition = officialPackage([
  'envoy/config/bootstrap/v3/bootstrap.proto',
  'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
  'envoy/extensions/filters/http/ext_proc/v3/ext_proc.proto',
  'envoy/extensions/filters/http/router/v3/router.proto',
  'envoy/extensions/filters/http/header_mutation/v3/header_mutation.proto',
  'envoy/extensions/upstreams/http/v3/http_protocol_options.proto',
]);

/** Finds a message or enum by full name, looking inside parents for nested ones. */
function byFullName(full: string): Resolved | undefined {
  const entry = defs[full] as { format?: string; type?: unknown } | undefined;
  if (entry?.format?.includes('DescriptorProto') && !entry.format.includes('Enum')) {
    return { kind: 'message', name: full, type: entry.type as MessageDescriptor };
  }
  if (entry?.format?.includes('EnumDescriptorProto')) {
    const values = (entry.type as { value: { name: string }[] }).value.map((v) => v.name);
    return { kind: 'enum', name: full, values };
  }
  const dot = full.lastIndexOf('.');
  if (dot < 0) return undefined;
  const parent = byFullName(full.slice(0, dot));
  if (parent?.kind !== 'message') return undefined;
  const leaf = full.slice(dot + 1);
  const nested = parent.type.nestedType.find((n) => n.name === leaf);
  if (nested) return { kind: 'message', name: full, type: nested };
  const en = parent.type.enumType.find((e) => e.name === leaf);
  return en ? { kind: 'enum', name: full, values: en.value.map((v) => v.name) } : undefined;
}

/** Protobuf name resolution: a relative type name is looked up from the innermost scope outwards. */
function resolve(typeName: string, scope: string): Resolved {
  if (typeName.startsWith('.')) return byFullName(typeName.slice(1))!;
  for (let s = scope; ; s = s.slice(0, Math.max(0, s.lastIndexOf('.')))) {
    const found = byFullName(s ? `${s}.${typeName}` : typeName);
    if (found) return found;
    if (!s) throw new Error(`cannot resolve ${typeName} from ${scope}`);
  }
}

const SCALAR_CHECKS: Record<string, (v: unknown) => boolean> = {
  TYPE_STRING: (v) => typeof v === 'string',
  TYPE_BYTES: (v) => typeof v === 'string',
  TYPE_BOOL: (v) => typeof v === 'boolean',
  TYPE_DOUBLE: (v) => typeof v === 'number',
  TYPE_FLOAT: (v) => typeof v === 'number',
};
const isInteger = (v: unknown) => Number.isInteger(v) || (typeof v === 'string' && /^-?\d+$/.test(v));

const WRAPPERS = new Set(
  ['Bool', 'UInt32', 'UInt64', 'Int32', 'Int64', 'Double', 'Float', 'String', 'Bytes'].map(
    (w) => `google.protobuf.${w}Value`,
  ),
);

function checkMessage(value: unknown, type: string, path: string): void {
  if (type === 'google.protobuf.Duration') {
    assert.match(String(value), /^\d+(\.\d+)?s$/, `${path}: a duration like 0.2s`);
    return;
  }
  if (WRAPPERS.has(type)) {
    assert.ok(typeof value !== 'object', `${path}: a plain value for ${type}`);
    return;
  }
  if (type === 'google.protobuf.Struct' || type === 'google.protobuf.Value') return;
  assert.ok(value && typeof value === 'object' && !Array.isArray(value), `${path}: an object for ${type}`);
  const obj = value as Record<string, unknown>;
  if (type === 'google.protobuf.Any') {
    const url = obj['@type'];
    assert.equal(typeof url, 'string', `${path}: typed_config needs @type`);
    const inner = String(url).replace(/^type\.googleapis\.com\//, '');
    assert.ok(byFullName(inner)?.kind === 'message', `${path}: unknown @type ${inner}`);
    const { '@type': _drop, ...rest } = obj;
    checkMessage(rest, inner, path);
    return;
  }
  const resolved = byFullName(type);
  assert.ok(resolved?.kind === 'message', `${path}: unknown message ${type}`);
  for (const [key, v] of Object.entries(obj)) {
    const field = resolved.type.field.find((f) => f.name === key || f.jsonName === key);
    assert.ok(field, `${path}.${key}: no such field in ${type}`);
    checkField(v, field, type, `${path}.${key}`);
  }
}

function checkField(value: unknown, field: FieldDescriptor, scope: string, path: string): void {
  const target = field.typeName ? resolve(field.typeName, scope) : undefined;
  if (target?.kind === 'message' && target.type.options?.mapEntry) {
    assert.ok(value && typeof value === 'object', `${path}: a map`);
    const valueField = target.type.field.find((f) => f.name === 'value')!;
    for (const [k, v] of Object.entries(value)) checkField(v, valueField, target.name, `${path}.${k}`);
    return;
  }
  if (field.label === 'LABEL_REPEATED') {
    assert.ok(Array.isArray(value), `${path}: a list`);
    value.forEach((v, i) => checkField(v, { ...field, label: 'LABEL_OPTIONAL' }, scope, `${path}[${i}]`));
    return;
  }
  if (target?.kind === 'message') return checkMessage(value, target.name, path);
  if (target?.kind === 'enum') {
    assert.ok(target.values.includes(String(value)), `${path}: ${String(value)} is not a ${target.name}`);
    return;
  }
  const check = SCALAR_CHECKS[field.type] ?? isInteger;
  assert.ok(check(value), `${path}: ${JSON.stringify(value)} is not a ${field.type}`);
}

async function loadExample(name: string): Promise<Record<string, unknown>> {
  return parse(await readFile(new URL(`../../examples/envoy/${name}`, import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >;
}

// Navigation helpers for the asserts below; the schema check above already vouched for the shape.
type Obj = Record<string, unknown>;
const at = (o: unknown, ...keys: (string | number)[]): unknown =>
  keys.reduce<unknown>((cur, k) => (cur as Obj | unknown[] | undefined)?.[k as never], o);

function parts(config: Obj) {
  const hcm = at(
    config,
    'static_resources',
    'listeners',
    0,
    'filter_chains',
    0,
    'filters',
    0,
    'typed_config',
  );
  const filters = at(hcm, 'http_filters') as Obj[];
  const clusters = at(config, 'static_resources', 'clusters') as Obj[];
  return {
    filterNames: filters.map((f) => f.name),
    extProc: filters.find((f) => f.name === 'envoy.filters.http.ext_proc')!.typed_config as Obj,
    routes: at(hcm, 'route_config', 'virtual_hosts', 0, 'routes') as Obj[],
    cluster: (name: string) => clusters.find((c) => c.name === name)!,
  };
}

for (const file of ['envoy.yaml', 'envoy-body.yaml']) {
  test(`examples/envoy/${file} uses only fields and values Envoy's API defines`, async () => {
    checkMessage(await loadExample(file), 'envoy.config.bootstrap.v3.Bootstrap', file);
  });

  test(`examples/envoy/${file} is wired the way the router expects`, async () => {
    const { filterNames, extProc, routes, cluster } = parts(await loadExample(file));
    const header = DEFAULT_CONFIG.envoy.destinationHeader;
    // The spoofed header is removed before ext_proc, and the router runs before the router filter.
    assert.deepEqual(filterNames, [
      'envoy.filters.http.header_mutation',
      'envoy.filters.http.ext_proc',
      'envoy.filters.http.router',
    ]);
    assert.equal(at(extProc, 'grpc_service', 'envoy_grpc', 'cluster_name'), 'least_load_router');
    assert.equal(at(extProc, 'processing_mode', 'request_header_mode'), 'SEND');
    assert.equal(at(extProc, 'processing_mode', 'response_header_mode'), 'SEND');
    assert.equal(
      at(extProc, 'processing_mode', 'request_body_mode'),
      file === 'envoy-body.yaml' ? 'BUFFERED' : 'NONE',
    );
    assert.equal(typeof extProc.failure_mode_allow, 'boolean');
    const picked = cluster('picked_worker');
    assert.equal(picked.type, 'ORIGINAL_DST');
    assert.equal(picked.lb_policy, 'CLUSTER_PROVIDED');
    assert.deepEqual(picked.original_dst_lb_config, { use_http_header: true, http_header_name: header });
    assert.equal(at(routes, 0, 'match', 'headers', 0, 'name'), header);
    assert.equal(at(routes, 0, 'route', 'cluster'), 'picked_worker');
    const router = cluster('least_load_router');
    assert.equal(
      at(
        router,
        'load_assignment',
        'endpoints',
        0,
        'lb_endpoints',
        0,
        'endpoint',
        'address',
        'socket_address',
        'port_value',
      ),
      DEFAULT_CONFIG.envoy.port,
    );
    assert.equal(at(router, 'health_checks', 0, 'grpc_health_check', 'service_name'), EXT_PROC_SERVICE);
    assert.ok(
      at(
        router,
        'typed_extension_protocol_options',
        'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        'explicit_http_config',
        'http2_protocol_options',
      ),
      'gRPC needs HTTP/2 to the router',
    );
  });
}

test('the checker itself rejects an unknown field, a bad enum value and an unknown @type', () => {
  const base = { static_resources: { clusters: [{ name: 'c', type: 'STATIC' }] } };
  checkMessage(base, 'envoy.config.bootstrap.v3.Bootstrap', 'ok');
  assert.throws(
    () =>
      checkMessage(
        { static_resources: { clusters: [{ name: 'c', typo: 1 }] } },
        'envoy.config.bootstrap.v3.Bootstrap',
        'x',
      ),
    /no such field/,
  );
  assert.throws(
    () =>
      checkMessage(
        { static_resources: { clusters: [{ type: 'NOPE' }] } },
        'envoy.config.bootstrap.v3.Bootstrap',
        'x',
      ),
    /is not a/,
  );
  assert.throws(
    () =>
      checkMessage(
        { typed_extension_protocol_options: { k: { '@type': 'type.googleapis.com/no.Such' } } },
        'envoy.config.cluster.v3.Cluster',
        'x',
      ),
    /unknown @type/,
  );
});
