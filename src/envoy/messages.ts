/**
 * The ext_proc and health messages as @grpc/proto-loader hands them to us (see proto-loader.ts for
 * the options: snake_case keys as in Envoy's docs, enums as names, absent fields `undefined`,
 * bytes as Buffer, and a `request`/`response` key naming the oneof member that is set).
 */

export interface HeaderValue {
  key?: string;
  value?: string;
  raw_value?: Uint8Array;
}

export interface HeaderMap {
  headers?: HeaderValue[];
}

export type HeaderAppendAction =
  'APPEND_IF_EXISTS_OR_ADD' | 'ADD_IF_ABSENT' | 'OVERWRITE_IF_EXISTS_OR_ADD' | 'OVERWRITE_IF_EXISTS';

export interface HeaderValueOption {
  header: HeaderValue;
  append_action?: HeaderAppendAction;
  keep_empty_value?: boolean;
}

export interface HeaderMutation {
  set_headers?: HeaderValueOption[];
  remove_headers?: string[];
}

/**
 * google.protobuf.Value in proto-loader's object form. camelCase even with keepCase: protobufjs
 * supplies the well-known types from its own bundled (camelCase) descriptors.
 */
export interface StructValue {
  nullValue?: 'NULL_VALUE' | number;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: Struct;
  listValue?: { values?: StructValue[] };
}

/** google.protobuf.Struct in proto-loader's object form. */
export interface Struct {
  fields?: Record<string, StructValue>;
}

export interface HttpHeaders {
  headers?: HeaderMap;
  end_of_stream?: boolean;
}

export interface HttpBody {
  body?: Uint8Array;
  end_of_stream?: boolean;
}

export interface HttpTrailers {
  trailers?: HeaderMap;
}

export type BodySendMode = 'NONE' | 'STREAMED' | 'BUFFERED' | 'BUFFERED_PARTIAL' | 'FULL_DUPLEX_STREAMED';
export type HeaderSendMode = 'DEFAULT' | 'SEND' | 'SKIP';

export interface ProtocolConfiguration {
  /** A name, or the number when a newer Envoy sends a mode this proto does not know. */
  request_body_mode?: BodySendMode | number;
  response_body_mode?: BodySendMode | number;
  send_body_without_waiting_for_header_response?: boolean;
}

export interface ProcessingMode {
  request_header_mode?: HeaderSendMode;
  response_header_mode?: HeaderSendMode;
  request_body_mode?: BodySendMode;
  response_body_mode?: BodySendMode;
  request_trailer_mode?: HeaderSendMode;
  response_trailer_mode?: HeaderSendMode;
}

export type RequestKind =
  | 'request_headers'
  | 'response_headers'
  | 'request_body'
  | 'response_body'
  | 'request_trailers'
  | 'response_trailers';

export interface ProcessingRequest {
  /** Which member of the `request` oneof is set. */
  request?: RequestKind;
  request_headers?: HttpHeaders;
  response_headers?: HttpHeaders;
  request_body?: HttpBody;
  response_body?: HttpBody;
  request_trailers?: HttpTrailers;
  response_trailers?: HttpTrailers;
  metadata_context?: { filter_metadata?: Record<string, Struct> };
  attributes?: Record<string, Struct>;
  observability_mode?: boolean;
  protocol_config?: ProtocolConfiguration;
}

export interface CommonResponse {
  status?: 'CONTINUE' | 'CONTINUE_AND_REPLACE';
  header_mutation?: HeaderMutation;
  body_mutation?: { body?: Uint8Array; clear_body?: boolean };
  trailers?: HeaderMap;
  clear_route_cache?: boolean;
}

export interface HeadersResponse {
  response?: CommonResponse;
}

export interface BodyResponse {
  response?: CommonResponse;
}

export interface TrailersResponse {
  header_mutation?: HeaderMutation;
}

export interface ImmediateResponse {
  /** An envoy.type.v3.StatusCode: a number when we build it, a name when decoded. */
  status: { code: number | string };
  headers?: HeaderMutation;
  body?: Uint8Array;
  grpc_status?: { status: number };
  details?: string;
}

export interface ProcessingResponse {
  response?: RequestKind | 'immediate_response';
  request_headers?: HeadersResponse;
  response_headers?: HeadersResponse;
  request_body?: BodyResponse;
  response_body?: BodyResponse;
  request_trailers?: TrailersResponse;
  response_trailers?: TrailersResponse;
  immediate_response?: ImmediateResponse;
  dynamic_metadata?: Struct;
  mode_override?: ProcessingMode;
  override_message_timeout?: { seconds?: string | number; nanos?: number };
}

export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

export interface HealthCheckRequest {
  service?: string;
}

export interface HealthCheckResponse {
  status: ServingStatus;
}
