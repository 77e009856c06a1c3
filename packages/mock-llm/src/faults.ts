// OpenAI-style error bodies the mock answers with (rate limits, server errors, context
// overflow). Owns the exact wording clients classify on; never decides when to fail.

/** A reply that is an HTTP error: what the server sends instead of a completion. */
export interface ErrorPlan {
  kind: 'error';
  status: number;
  body: string;
  headers: Record<string, string>;
}

/** An OpenAI-shaped error body. */
export function openaiErrorBody(message: string, type: string, code: string | null = null): string {
  return JSON.stringify({ error: { message, type, param: null, code } });
}

/** The 400 OpenAI returns when the prompt does not fit the model. */
export function contextLengthError(limit: number, promptTokens: number): ErrorPlan {
  const message =
    `This model's maximum context length is ${limit} tokens. However, your messages resulted in ` +
    `${promptTokens} tokens. Please reduce the length of the messages or completion.`;
  return {
    kind: 'error',
    status: 400,
    body: JSON.stringify({
      error: { message, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' },
    }),
    headers: {},
  };
}
