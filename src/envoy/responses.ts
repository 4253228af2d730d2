import type { LlrError } from '../core/errors.js';
import type { HeaderValueOption, ProcessingResponse, RequestKind } from './messages.js';

/** The two messages a pick can answer: headers normally, the buffered body for body-aware policies. */
export type PickPhase = 'request_headers' | 'request_body';

/** The dynamic metadata namespace Envoy's load balancers (and the Inference Extension) read. */
export const LB_METADATA_NAMESPACE = 'envoy.lb';

function setHeader(key: string, value: string): HeaderValueOption {
  // raw_value only: Envoy rejects a mutation that sets both value and raw_value.
  return {
    header: { key, raw_value: Buffer.from(value, 'latin1') },
    append_action: 'OVERWRITE_IF_EXISTS_OR_ADD',
  };
}

/** Response objects handed out again and again, never mutated: each is encoded only once. */
const shared = new WeakSet<ProcessingResponse>();

function share(response: ProcessingResponse): ProcessingResponse {
  shared.add(response);
  return response;
}

const CONTINUE: Readonly<Record<RequestKind, ProcessingResponse>> = Object.freeze({
  request_headers: share({ request_headers: { response: { status: 'CONTINUE' } } }),
  response_headers: share({ response_headers: { response: { status: 'CONTINUE' } } }),
  request_body: share({ request_body: { response: { status: 'CONTINUE' } } }),
  response_body: share({ response_body: { response: { status: 'CONTINUE' } } }),
  request_trailers: share({ request_trailers: {} }),
  response_trailers: share({ response_trailers: {} }),
});

/** "Carry on unchanged" in the response type that matches `kind`. Shared objects: do not mutate. */
export function continueResponse(kind: RequestKind): ProcessingResponse {
  return CONTINUE[kind];
}

/**
 * Routes the request to `destination` (`host:port`, or a comma-separated list with fallbacks):
 * the destination header, overwriting any copy the client sent, a route cache clear so a route
 * matching on that header sees it, and the same value as `envoy.lb` dynamic metadata.
 */
export function routeResponse(phase: PickPhase, header: string, destination: string): ProcessingResponse {
  const response = {
    response: {
      status: 'CONTINUE' as const,
      header_mutation: { set_headers: [setHeader(header, destination)] },
      clear_route_cache: true,
    },
  };
  return {
    [phase]: response,
    dynamic_metadata: {
      fields: {
        [LB_METADATA_NAMESPACE]: { structValue: { fields: { [header]: { stringValue: destination } } } },
      },
    },
  };
}

/** Envoy answers the client itself: a JSON error body, and on a 503 a hint to retry shortly. */
export function errorResponse(status: number, error: LlrError, retryAfterSeconds = 1): ProcessingResponse {
  const body = JSON.stringify({ error: { code: error.code, message: error.message } });
  const headers = [setHeader('content-type', 'application/json')];
  if (status === 503) headers.push(setHeader('retry-after', String(retryAfterSeconds)));
  return {
    immediate_response: {
      status: { code: status },
      headers: { set_headers: headers },
      body: Buffer.from(body, 'utf8'),
      // Shows up as %RESPONSE_CODE_DETAILS% in Envoy's access log.
      details: error.code.toLowerCase(),
    },
  };
}

const MAX_CACHED = 4096;

/**
 * Route responses by destination. A worker's answer is the same every time, so building it once
 * keeps the per-request work to the pick itself. Cleared wholesale when it grows past a bound
 * (workers come and go; fallback lists multiply the keys).
 */
export class RouteResponseCache {
  readonly #header: string;
  readonly #byPhase: Record<PickPhase, Map<string, ProcessingResponse>> = {
    request_headers: new Map(),
    request_body: new Map(),
  };

  constructor(header: string) {
    this.#header = header;
  }

  get(phase: PickPhase, destination: string): ProcessingResponse {
    const map = this.#byPhase[phase];
    let response = map.get(destination);
    if (response === undefined) {
      if (map.size >= MAX_CACHED) map.clear();
      response = share(routeResponse(phase, this.#header, destination));
      map.set(destination, response);
    }
    return response;
  }
}

/**
 * Wraps the ProcessingResponse encoder so a shared response (a continue, a worker's route) is
 * encoded once and its bytes reused: most answers are one of a handful of constant messages, and
 * protobuf encoding is the largest per-message cost the server itself controls.
 */
export function encodeOnce(
  encode: (value: ProcessingResponse) => Buffer,
): (value: ProcessingResponse) => Buffer {
  const encoded = new WeakMap<ProcessingResponse, Buffer>();
  return (value) => {
    if (!shared.has(value)) return encode(value);
    let bytes = encoded.get(value);
    if (bytes === undefined) {
      bytes = encode(value);
      encoded.set(value, bytes);
    }
    return bytes;
  };
}
