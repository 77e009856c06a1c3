// Classifies a provider's rejection (docs/context.md §2 point 3): a prompt that is too long is an
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
  /exceeds the available context size/i, // llama.cpp server (HTTP 400 or in-stream)
  /is larger than the max context size/i, // llama.cpp server, embedding/non-causal path
  /context shift is disabled/i, // llama.cpp server: the prompt fit, prompt + output did not (mid-stream)
  /greater than the context length/i, // LM Studio
  /context length of only \d+ tokens/i, // LM Studio ("…loaded with context length of only 4096 tokens")
  /context the overflows/i, // LM Studio ("Trying to keep the first N tokens when context the overflows")
  /`?inputs`? tokens \+ `?max_new_tokens`? must be <=/i, // TGI (422)
  /must have less than \d+ tokens/i, // TGI ("`inputs` must have less than 4096 tokens")
  /exceeds? (the )?(maximum |max )?context length/i, // Ollama, vLLM variants
  /exceeded max context length/i, // Ollama runner
  /too many tokens in (the )?(prompt|request|input)/i,
  /request_too_large/i, // Anthropic 413
];

// What a server says when it does not support a request parameter or feature: terminal whatever
// the status (llama.cpp-based proxies answer 500), since sending the same request again cannot help.
const UNSUPPORTED_PATTERNS: RegExp[] = [
  /unsupported param(eter)?/i, // OpenAI-compatible proxies: "Unsupported param: tools"
  /does not support tools/i, // Ollama: "registry.ollama.ai/library/gemma:2b does not support tools"
  /tool choice requires --enable-auto-tool-choice/i, // vLLM without a tool parser
  /tools? (are|is) not supported/i,
  /unrecognized request argument/i, // OpenAI: "Unrecognized request argument supplied: x"
  /extra (inputs|fields) (are|is) not permitted/i, // vLLM / pydantic strict request models
  /not_supported_error/i, // llama.cpp server type
];

/** The server refuses a parameter or feature it does not support (e.g. `tools`). */
export function isUnsupportedText(text: string | undefined): boolean {
  return text !== undefined && UNSUPPORTED_PATTERNS.some((re) => re.test(text));
}

/** Whether a provider's error text says the prompt is too long. */
export function isOverflowText(text: string | undefined): boolean {
  return text !== undefined && OVERFLOW_PATTERNS.some((re) => re.test(text));
}

/** Classifies a provider rejection: overflow, retryable, or terminal. */
export function classifyProviderError(input: ProviderErrorInput): ProviderErrorClass {
  const { status } = input;
  // A rate limit can quote token counts ("tokens per minute"): it is never an overflow.
  if (status === 429) return 'retryable';
  if (isOverflowText(input.code) || isOverflowText(input.body) || isOverflowText(input.message)) {
    return 'overflow';
  }
  if (isUnsupportedText(input.code) || isUnsupportedText(input.body) || isUnsupportedText(input.message)) {
    return 'terminal';
  }
  // Some gateways answer an oversized request with a bare 400/413 and nothing to match.
  if ((status === 400 || status === 413) && (input.body ?? '').trim() === '') return 'overflow';
  if (status === undefined || status === 408 || status >= 500) return 'retryable';
  if (status >= 400) return 'terminal';
  return 'retryable';
}
