/**
 * OpenAI-shaped bodies for `/v1/completions` and `/v1/chat/completions`, as vLLM and SGLang emit
 * them: SSE `data: {json}\n\n` chunks ending in `data: [DONE]\n\n`, or one JSON with `usage`.
 */
export type ApiKind = 'completion' | 'chat';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChunkHeader {
  id: string;
  model: string;
  /** Unix seconds. */
  created: number;
}

export const SSE_DONE = 'data: [DONE]\n\n';

const WORDS = [' the', ' model', ' says', ' hello', ' to', ' you', ' and', ' then', ' more'];

/** Text of generated token `n` (1-based): roughly four characters, like a real token. */
export function tokenText(n: number): string {
  return WORDS[n % WORDS.length]!;
}

export function tokensText(from: number, to: number): string {
  let s = '';
  for (let n = from; n <= to; n++) s += tokenText(n);
  return s;
}

export function newId(kind: ApiKind, seq: number): string {
  return `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-sim${seq.toString(36)}`;
}

/** One streamed chunk; the first chat chunk carries the assistant role, as vLLM's does. */
export function streamChunk(
  kind: ApiKind,
  h: ChunkHeader,
  text: string,
  finishReason: string | null,
  first: boolean,
  withUsageField: boolean,
): string {
  const choice =
    kind === 'chat'
      ? {
          index: 0,
          delta: first ? { role: 'assistant', content: text } : { content: text },
          logprobs: null,
          finish_reason: finishReason,
        }
      : { index: 0, text, logprobs: null, finish_reason: finishReason };
  const body = {
    id: h.id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created: h.created,
    model: h.model,
    choices: [choice],
    ...(withUsageField ? { usage: null } : {}),
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

/** The final chunk `stream_options.include_usage` asks for: no choices, just usage. */
export function usageChunk(kind: ApiKind, h: ChunkHeader, usage: Usage): string {
  const body = {
    id: h.id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created: h.created,
    model: h.model,
    choices: [],
    usage,
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

export function fullResponse(
  kind: ApiKind,
  h: ChunkHeader,
  text: string,
  finishReason: string,
  usage: Usage,
): object {
  const choice =
    kind === 'chat'
      ? {
          index: 0,
          message: { role: 'assistant', content: text },
          logprobs: null,
          finish_reason: finishReason,
        }
      : { index: 0, text, logprobs: null, finish_reason: finishReason };
  return {
    id: h.id,
    object: kind === 'chat' ? 'chat.completion' : 'text_completion',
    created: h.created,
    model: h.model,
    choices: [choice],
    usage,
  };
}

export function errorBody(
  message: string,
  type = 'invalid_request_error',
  code: string | null = null,
): object {
  return { error: { message, type, param: null, code } };
}
