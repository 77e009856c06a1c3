// Classifies a provider's rejection (CONTEXT.md §2 point 3): a prompt that is too long is an
// overflow to compact, never an error to retry; rate limits and outages are retried; anything else
// the provider refuses is terminal. The llm package extracts status/body/code from the SDK error.

export type ProviderErrorClass = 'overflow' | 'retryable' | 'terminal';

export interface ProviderErrorInput {
  /** HTTP status; undefined for network errors. */
  status?: number | undefined;
  /** Response body as text. */
  body?: string | undefined;
  /** Provider or SDK error code (e.g. `context_length_exceeded`, `ECONNRESET`). */
  code?: string | undefined;
  message?: string | undefined;
}

// What providers say when the prompt does not fit, matched case-insensitively anywhere in the
// code, body or message.
const OVERFLOW_PATTERNS: RegExp[] = [
  /context[ _]length[ _]exceeded/i, // OpenAI code, and its prose variant
  /prompt is too long/i, // Anthropic
  /exceeds? the context window/i, // OpenAI Responses
  /input token count.*exceeds the maximum/i, // Google
  /please reduce the length of the messages or completion/i, // OpenAI chat, Groq
  /maximum context length is/i, // OpenAI, vLLM, DeepSeek, OpenRouter
  /maximum prompt length is/i, // xAI
  /input is too long for requested model/i, // Bedrock
  /exceeds the available context size/i, // llama.cpp
  /greater than the context length/i, // LM Studio
  /too many tokens in (the )?(prompt|request|input)/i,
  /request_too_large/i, // Anthropic 413
];

export function isOverflowText(text: string | undefined): boolean {
  return text !== undefined && OVERFLOW_PATTERNS.some((re) => re.test(text));
}

export function classifyProviderError(input: ProviderErrorInput): ProviderErrorClass {
  const { status } = input;
  // A rate limit can quote token counts ("tokens per minute"): it is never an overflow.
  if (status === 429) return 'retryable';
  if (isOverflowText(input.code) || isOverflowText(input.body) || isOverflowText(input.message)) {
    return 'overflow';
  }
  // Some gateways answer an oversized request with a bare 400/413 and nothing to match.
  if ((status === 400 || status === 413) && (input.body ?? '').trim() === '') return 'overflow';
  if (status === undefined || status === 408 || status >= 500) return 'retryable';
  if (status >= 400) return 'terminal';
  return 'retryable';
}
