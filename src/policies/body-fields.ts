import type { RequestContext } from './policy.js';

/** Rough prompt size for routing only: English text averages about four characters per token. */
export const CHARS_PER_TOKEN = 4;

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Chat content is a string or an array of parts; only text parts count toward the prompt. */
function contentText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part === 'string') texts.push(part);
    else if (isObject(part) && typeof part.text === 'string') texts.push(part.text);
  }
  return texts.join('\n');
}

function flattenMessages(messages: unknown[]): string {
  const texts: string[] = [];
  for (const message of messages) {
    const text = isObject(message) ? contentText(message.content) : undefined;
    if (text !== undefined) texts.push(text);
  }
  return texts.join('\n');
}

/**
 * Fields a body-aware policy reads, shared by both front doors so they route a body the same way: from the OpenAI (`prompt`, `messages`), SGLang (`text`) and TGI (`inputs`) shapes. */
export function bodyFields(parsed: unknown): Pick<RequestContext, 'model' | 'prompt' | 'promptTokens'> {
  if (!isObject(parsed)) return {};
  const out: Pick<RequestContext, 'model' | 'prompt' | 'promptTokens'> = {};
  if (typeof parsed.model === 'string') out.model = parsed.model;
  const { prompt, messages, text, inputs } = parsed;
  if (Array.isArray(messages)) out.prompt = flattenMessages(messages);
  else if (typeof prompt === 'string') out.prompt = prompt;
  else if (Array.isArray(prompt) && prompt.every((p) => typeof p === 'number'))
    out.promptTokens = prompt.length;
  else if (Array.isArray(prompt)) out.prompt = prompt.filter((p) => typeof p === 'string').join('\n');
  else if (typeof text === 'string') out.prompt = text;
  else if (typeof inputs === 'string') out.prompt = inputs;
  if (out.prompt !== undefined) out.promptTokens = Math.ceil(out.prompt.length / CHARS_PER_TOKEN);
  return out;
}

/** Parses the body as JSON when it looks like JSON; anything else routes without body fields. */
export function parseJsonBody(body: Buffer, contentType: string | undefined): unknown {
  if (body.length === 0) return undefined;
  const looksJson = contentType ? contentType.includes('json') : body[0] === 0x7b; // '{'
  if (!looksJson) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined; // the worker will answer 400; routing must not fail on it
  }
}
