// Plays Envoy's part for one HTTP request end to end: the ext_proc message sequence of the default
// processing mode (request headers, then response headers) or of request_body_mode BUFFERED,
// applying our header mutation the way Envoy does and sending the request to the endpoint named
// in the destination header, as an ORIGINAL_DST cluster with use_http_header would.
import assert from 'node:assert/strict';
import type { StatusObject } from '@grpc/grpc-js';
import type { HeaderValue, HeaderValueOption, ProcessingResponse } from '../../src/envoy/messages.js';
import { headerValue } from '../../src/envoy/request-context.js';
import { rawHeaders, type EnvoyClient } from './envoy-client.js';

export interface HttpRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface FlowResult {
  /** Destination header value after our mutation (undefined if the request never got one). */
  destination: string | undefined;
  /** What Envoy would put in the envoy.lb metadata namespace. */
  lbMetadata: Record<string, string | undefined> | undefined;
  /** Every response we got, in order. */
  responses: ProcessingResponse[];
  upstream?: { status: number; body: unknown };
  immediate?: ProcessingResponse['immediate_response'];
  grpcStatus: StatusObject;
}

/** Envoy's OVERWRITE_IF_EXISTS_OR_ADD: drop every existing copy of the key, then add ours. */
export function applyMutation(headers: HeaderValue[], set: HeaderValueOption[] = []): HeaderValue[] {
  let out = headers;
  for (const opt of set) {
    assert.equal(opt.append_action, 'OVERWRITE_IF_EXISTS_OR_ADD');
    const key = opt.header.key;
    out = [...out.filter((h) => h.key !== key), opt.header];
  }
  return out;
}

function lbMetadata(res: ProcessingResponse): Record<string, string | undefined> | undefined {
  const ns = res.dynamic_metadata?.fields?.['envoy.lb']?.structValue?.fields;
  if (!ns) return undefined;
  return Object.fromEntries(Object.entries(ns).map(([k, v]) => [k, v.stringValue]));
}

export async function envoyFlow(
  client: EnvoyClient,
  req: HttpRequest,
  options: { bodyMode?: 'NONE' | 'BUFFERED'; destinationHeader?: string } = {},
): Promise<FlowResult> {
  const destHeader = options.destinationHeader ?? 'x-gateway-destination-endpoint';
  const method = req.method ?? (req.body === undefined ? 'GET' : 'POST');
  const path = req.path ?? '/v1/chat/completions';
  let headers = rawHeaders({
    ':authority': 'gateway.example',
    ':path': path,
    ':method': method,
    ':scheme': 'http',
    'user-agent': 'test-client/1.0',
    'x-forwarded-proto': 'http',
    'x-request-id': '2b1d5b9e-1111-4c43-9a0d-6a5f0c7b5e11',
    ...(req.body !== undefined && {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(req.body)),
    }),
    ...req.headers,
  });
  const call = client.open();
  const responses: ProcessingResponse[] = [];
  const destinationNow = () => {
    const h = headers.find((x) => x.key === destHeader);
    return h && headerValue(h);
  };
  const result = (extra: Partial<FlowResult>, grpcStatus: StatusObject): FlowResult => ({
    destination: destinationNow(),
    lbMetadata: responses.map(lbMetadata).find((m) => m !== undefined),
    responses,
    grpcStatus,
    ...extra,
  });

  const hasBody = req.body !== undefined;
  let res = await call.exchange({ request_headers: { headers: { headers }, end_of_stream: !hasBody } });
  responses.push(res);
  if (res.immediate_response) return result({ immediate: res.immediate_response }, await call.end());
  assert.equal(res.response, 'request_headers');
  headers = applyMutation(headers, res.request_headers?.response?.header_mutation?.set_headers);

  if (hasBody && options.bodyMode === 'BUFFERED') {
    res = await call.exchange({ request_body: { body: Buffer.from(req.body!), end_of_stream: true } });
    responses.push(res);
    if (res.immediate_response) return result({ immediate: res.immediate_response }, await call.end());
    assert.equal(res.response, 'request_body');
    headers = applyMutation(headers, res.request_body?.response?.header_mutation?.set_headers);
  }

  const dest = headers.find((h) => h.key === destHeader);
  assert.ok(dest, 'no destination header after ext_proc');
  // ORIGINAL_DST uses the first endpoint; the rest are fallbacks for retries.
  const endpoint = headerValue(dest).split(',')[0];
  const upstream = await fetch(`http://${endpoint}${path}`, {
    method,
    ...(hasBody && { body: req.body, headers: { 'content-type': 'application/json' } }),
  });
  const body: unknown = await upstream.json();

  res = await call.exchange({
    response_headers: {
      headers: {
        headers: rawHeaders({
          ':status': String(upstream.status),
          'content-type': upstream.headers.get('content-type') ?? '',
          'x-envoy-upstream-service-time': '1',
        }),
      },
      end_of_stream: false,
    },
  });
  responses.push(res);
  assert.equal(res.response, 'response_headers');
  return result({ upstream: { status: upstream.status, body } }, await call.end());
}
