// Our hand-written proto/ against Envoy's official definitions (from @grpc/grpc-js-xds): every
// message we read or write must mean the same on the wire in both directions, and fields Envoy
// adds (or that we left out) must not disturb our decoding.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NoHealthyWorkerError } from '../../src/core/errors.js';
import type { ProcessingRequest, ProcessingResponse } from '../../src/envoy/messages.js';
import { continueResponse, errorResponse, routeResponse } from '../../src/envoy/responses.js';
import { rawHeaders } from './envoy-client.js';
import { processMethod } from './official-protos.js';

const ours = processMethod('ours');
const official = processMethod('official');

const struct = (fields: Record<string, string>) => ({
  fields: Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, { stringValue: v }])),
});

/** What Envoy sends, in every shape we handle. */
const REQUESTS: Record<string, ProcessingRequest> = {
  'request_headers, raw_value (Envoy >= 1.27)': {
    request_headers: {
      headers: {
        headers: rawHeaders({
          ':authority': 'gw.example',
          ':path': '/v1/chat/completions',
          ':method': 'POST',
          ':scheme': 'https',
          'content-type': 'application/json',
          'x-binary': '\u00ff\u0000\u0080',
        }),
      },
      end_of_stream: false,
    },
    metadata_context: { filter_metadata: { 'envoy.filters.http.jwt_authn': struct({ sub: 'alice' }) } },
    attributes: { 'envoy.filters.http.ext_proc': struct({ 'source.address': '10.1.2.3:5555' }) },
  },
  'request_headers, value (older Envoy)': {
    request_headers: {
      headers: {
        headers: [
          { key: ':path', value: '/x' },
          { key: ':method', value: 'GET' },
        ],
      },
      end_of_stream: true,
    },
  },
  response_headers: {
    response_headers: { headers: { headers: rawHeaders({ ':status': '503', 'content-length': '0' }) } },
  },
  request_body: { request_body: { body: Buffer.from('{"model":"m","prompt":"hi"}'), end_of_stream: true } },
  response_body: { response_body: { body: Buffer.from('data: [DONE]\n\n'), end_of_stream: true } },
  request_trailers: { request_trailers: { trailers: { headers: rawHeaders({ 'x-checksum': 'abc' }) } } },
  response_trailers: { response_trailers: { trailers: { headers: rawHeaders({ 'grpc-status': '0' }) } } },
  observability_mode: {
    observability_mode: true,
    request_headers: { headers: { headers: rawHeaders({ ':method': 'GET' }) }, end_of_stream: true },
  },
};

/** What we send, from our own builders, plus every other field of our subset. */
const RESPONSES: Record<string, ProcessingResponse> = {
  'route at request_headers': routeResponse(
    'request_headers',
    'x-gateway-destination-endpoint',
    '10.0.0.5:8000',
  ),
  'route at request_body': routeResponse(
    'request_body',
    'x-gateway-destination-endpoint',
    '10.0.0.5:8000,10.0.0.6:8000',
  ),
  'no healthy worker': errorResponse(503, new NoHealthyWorkerError()),
  ...Object.fromEntries(
    (
      [
        'request_headers',
        'response_headers',
        'request_body',
        'response_body',
        'request_trailers',
        'response_trailers',
      ] as const
    ).map((kind) => [`continue ${kind}`, continueResponse(kind)]),
  ),
  'the rest of the subset': {
    request_headers: {
      response: {
        status: 'CONTINUE_AND_REPLACE',
        header_mutation: {
          set_headers: [
            { header: { key: 'x-a', value: 'v' }, append_action: 'ADD_IF_ABSENT', keep_empty_value: true },
          ],
          remove_headers: ['x-b'],
        },
        body_mutation: { body: Buffer.from('new') },
        trailers: { headers: rawHeaders({ 'x-t': '1' }) },
        clear_route_cache: true,
      },
    },
    mode_override: {
      request_header_mode: 'SEND',
      response_header_mode: 'SKIP',
      request_body_mode: 'BUFFERED',
      response_body_mode: 'STREAMED',
      request_trailer_mode: 'SKIP',
      response_trailer_mode: 'SEND',
    },
    override_message_timeout: { seconds: '2', nanos: 500 },
  },
  'immediate response with grpc status': {
    immediate_response: {
      status: { code: 429 },
      headers: { remove_headers: ['x-internal'] },
      body: Buffer.from('slow down'),
      grpc_status: { status: 8 },
      details: 'rate_limited',
    },
  },
  'trailers mutation and clear body': {
    response_trailers: {
      header_mutation: { set_headers: [{ header: { key: 'x-done', raw_value: Buffer.from('1') } }] },
    },
    dynamic_metadata: struct({ k: 'v' }),
  },
};

/** The canonical object form of bytes under one definition (drops what that definition does not know). */
const viaOfficialRequest = (buf: Buffer) => official.requestDeserialize(buf);
const viaOursRequest = (buf: Buffer) => ours.requestDeserialize(buf);
const viaOfficialResponse = (buf: Buffer) => official.responseDeserialize(buf);
const viaOursResponse = (buf: Buffer) => ours.responseDeserialize(buf);

for (const [name, msg] of Object.entries(REQUESTS)) {
  test(`ProcessingRequest "${name}": official encoding decodes the same with ours, and back`, () => {
    const envoyBytes = official.requestSerialize(msg);
    const oursBytes = ours.requestSerialize(msg);
    assert.deepEqual(oursBytes, envoyBytes, 'same bytes for the same message');
    assert.deepEqual(viaOursRequest(envoyBytes), viaOfficialRequest(envoyBytes));
    assert.deepEqual(viaOfficialRequest(oursBytes), viaOursRequest(oursBytes));
  });
}

for (const [name, msg] of Object.entries(RESPONSES)) {
  test(`ProcessingResponse "${name}": our encoding decodes the same with Envoy's, and back`, () => {
    const oursBytes = ours.responseSerialize(msg);
    const envoyBytes = official.responseSerialize(msg);
    assert.deepEqual(oursBytes, envoyBytes, 'same bytes for the same message');
    const decoded = viaOfficialResponse(oursBytes);
    assert.deepEqual(decoded, viaOursResponse(oursBytes));
    assert.deepEqual(viaOursResponse(envoyBytes), decoded);
  });
}

test("the route response decodes in Envoy's terms exactly as the Inference Extension expects", () => {
  const decoded = viaOfficialResponse(
    ours.responseSerialize(
      routeResponse('request_headers', 'x-gateway-destination-endpoint', '10.0.0.5:8000'),
    ),
  );
  const common = decoded.request_headers!.response!;
  assert.equal(common.clear_route_cache, true);
  const opt = common.header_mutation!.set_headers![0]!;
  assert.equal(opt.header.key, 'x-gateway-destination-endpoint');
  assert.equal(Buffer.from(opt.header.raw_value!).toString(), '10.0.0.5:8000');
  assert.equal(opt.header.value, undefined);
  assert.equal(opt.append_action, 'OVERWRITE_IF_EXISTS_OR_ADD');
  const lb = decoded.dynamic_metadata!.fields!['envoy.lb']!.structValue!.fields!;
  assert.equal(lb['x-gateway-destination-endpoint']!.stringValue, '10.0.0.5:8000');
  const imm = viaOfficialResponse(ours.responseSerialize(errorResponse(503, new NoHealthyWorkerError())));
  assert.equal(imm.immediate_response!.status.code, 'ServiceUnavailable');
});

test('fields only Envoy knows (deprecated attributes, typed metadata) are skipped by our decoder', () => {
  const withExtras = {
    request_headers: {
      headers: { headers: rawHeaders({ ':path': '/a' }) },
      attributes: { legacy: struct({ x: 'y' }) },
      end_of_stream: true,
    },
    metadata_context: {
      filter_metadata: { ns: struct({ a: 'b' }) },
      typed_filter_metadata: {
        ns: { type_url: 'type.googleapis.com/google.protobuf.Struct', value: Buffer.from([]) },
      },
    },
  };
  const bytes = official.requestSerialize(withExtras as ProcessingRequest);
  const envoySide = viaOfficialRequest(bytes) as Record<string, Record<string, unknown>>;
  assert.ok(envoySide.metadata_context?.typed_filter_metadata, 'the extras really are on the wire');
  assert.ok(envoySide.request_headers?.attributes);
  const decoded = viaOursRequest(bytes);
  assert.equal(decoded.request, 'request_headers');
  assert.equal(Buffer.from(decoded.request_headers!.headers!.headers![0]!.raw_value!).toString(), '/a');
  assert.equal(decoded.request_headers!.end_of_stream, true);
  assert.deepEqual(Object.keys(decoded.metadata_context!), ['filter_metadata']);
  assert.equal(decoded.metadata_context!.filter_metadata!.ns!.fields!.a!.stringValue, 'b');
  assert.equal((decoded.request_headers as Record<string, unknown>).attributes, undefined);
});

test('fields a future Envoy adds (unknown numbers, any wire type) do not break our decoding', () => {
  const base = official.requestSerialize(REQUESTS['request_headers, raw_value (Envoy >= 1.27)']!);
  const unknown = Buffer.concat([
    Buffer.from([0xb8, 0x06, 0x2a]), // field 103, varint 42
    Buffer.from([0xc2, 0x06, 0x03, 0x08, 0x01, 0x10]), // field 104, length-delimited 3 bytes
    Buffer.from([0xcd, 0x06, 1, 2, 3, 4]), // field 105, fixed32
    Buffer.from([0xc9, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]), // field 105 as fixed64 (field 105, wire type 1)
  ]);
  // Protobuf concatenation merges messages; appended unknown fields ride along.
  const decoded = viaOursRequest(Buffer.concat([base, unknown]));
  assert.deepEqual(decoded, viaOursRequest(base));
});

test('protocol_config (Envoy 1.33+, field 11) is read by ours and ignored by older Envoy definitions', () => {
  const msg: ProcessingRequest = {
    request_headers: { headers: { headers: rawHeaders({ ':path': '/' }) } },
    protocol_config: { request_body_mode: 'BUFFERED', send_body_without_waiting_for_header_response: true },
  };
  const bytes = ours.requestSerialize(msg);
  assert.deepEqual(viaOursRequest(bytes).protocol_config, msg.protocol_config);
  const old = viaOfficialRequest(bytes);
  assert.equal(old.request, 'request_headers');
  assert.equal((old as Record<string, unknown>).protocol_config, undefined);
  // A body mode newer than our enum still decodes, as its number.
  const future = viaOursRequest(ours.requestSerialize({ ...msg, protocol_config: { request_body_mode: 9 } }));
  assert.equal(future.protocol_config?.request_body_mode, 9);
});
