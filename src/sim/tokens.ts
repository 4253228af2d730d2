/**
 * Prompt-size estimation without a tokenizer. English BPE vocabularies average about four
 * characters per token, which is all the simulator and the load generator need: they agree on the
 * same rule, so a prompt built for N tokens is estimated back as about N.
 */
export const CHARS_PER_TOKEN = 4;

/** Chat templates wrap each message in role markers; OpenAI documents ~4 tokens per message. */
const TOKENS_PER_MESSAGE = 4;

export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

function contentTokens(content: unknown): number {
  if (typeof content === 'string') return estimateTextTokens(content);
  if (Array.isArray(content)) {
    let n = 0;
    for (const part of content) {
      if (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string') {
        n += estimateTextTokens((part as { text: string }).text);
      }
    }
    return n;
  }
  return 0;
}

/**
 * Tokens in an OpenAI request body: `prompt` (a string, strings, token ids or arrays of ids) for
 * completions, `messages` for chat. Token-id arrays count exactly; text is estimated.
 */
export function estimatePromptTokens(body: unknown): number {
  if (!body || typeof body !== 'object') return 0;
  const b = body as { prompt?: unknown; messages?: unknown };
  if (Array.isArray(b.messages)) {
    let n = 0;
    for (const m of b.messages) {
      n += TOKENS_PER_MESSAGE + contentTokens((m as { content?: unknown } | null)?.content);
    }
    return n;
  }
  const p = b.prompt;
  if (typeof p === 'string') return estimateTextTokens(p);
  if (Array.isArray(p)) {
    if (p.every((x) => typeof x === 'number')) return p.length;
    let n = 0;
    for (const x of p) {
      if (typeof x === 'string') n += estimateTextTokens(x);
      else if (Array.isArray(x)) n += x.length;
    }
    return n;
  }
  return 0;
}

/**
 * Each chat message's role marker in `promptText`: 16 characters, so the marker is worth the
 * TOKENS_PER_MESSAGE tokens `estimatePromptTokens` charges for it and text stays ~4 chars a token.
 */
function roleMarker(role: unknown): string {
  return `<|${typeof role === 'string' ? role : 'user'}|>`.padEnd(TOKENS_PER_MESSAGE * CHARS_PER_TOKEN, ' ');
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let s = '';
  for (const part of content) {
    if (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string') {
      s += (part as { text: string }).text;
    }
  }
  return s;
}

/**
 * The prompt as the simulated engine "tokenizes" it, for the prefix cache: chat messages rendered in
 * order through a minimal template (role marker, then content), or the completion prompt's text.
 * A conversation's next turn renders to this turn's text plus more, as with a real chat template.
 * Undefined for token-id prompts and bodies without a prompt.
 */
export function promptText(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as { prompt?: unknown; messages?: unknown };
  if (Array.isArray(b.messages)) {
    let s = '';
    for (const m of b.messages) {
      const msg = m as { role?: unknown; content?: unknown } | null;
      s += roleMarker(msg?.role) + contentText(msg?.content);
    }
    return s;
  }
  if (typeof b.prompt === 'string') return b.prompt;
  if (Array.isArray(b.prompt) && b.prompt.every((x) => typeof x === 'string')) return b.prompt.join('');
  return undefined;
}

const FILLER = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ';

/** Text that `estimateTextTokens` counts as exactly `tokens` tokens (cheap: slices of one string). */
export function makePromptText(tokens: number): string {
  const chars = Math.max(0, Math.floor(tokens)) * CHARS_PER_TOKEN;
  if (chars <= FILLER.length) return FILLER.slice(0, chars);
  return FILLER.repeat(Math.ceil(chars / FILLER.length)).slice(0, chars);
}
