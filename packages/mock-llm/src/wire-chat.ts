// Chat Completions wire format (POST /v1/chat/completions): `chat.completion` bodies and the
// `chat.completion.chunk` stream, exactly as @ai-sdk/openai's chat parser reads them.
// Pure: turns a Plan into JSON values; never touches the socket.

import type { OutputPlan, UsageNumbers } from './plan.ts';

export interface WireMeta {
  id: string;
  created: number;
  model: string;
}

/** The Chat Completions `usage` object. */
export function chatUsage(u: UsageNumbers): Record<string, unknown> {
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: {
      cached_tokens: u.cached,
      ...(u.cacheWrite !== undefined ? { cache_write_tokens: u.cacheWrite } : {}),
    },
    completion_tokens_details: { reasoning_tokens: u.reasoning },
  };
}

/** A whole (non-streamed) Chat Completions answer. */
export function chatCompletion(plan: OutputPlan, meta: WireMeta): Record<string, unknown> {
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: plan.text === '' && plan.toolCalls.length > 0 ? null : plan.text,
    refusal: null,
  };
  if (plan.toolCalls.length > 0) {
    message.tool_calls = plan.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: plan.finishReason }],
    usage: chatUsage(plan.usage),
  };
}

/** Splits a tool call's argument string into a few deltas, as real streams do. */
function argumentPieces(args: string): string[] {
  if (args.length <= 8) return [args];
  const size = Math.ceil(args.length / 3);
  const out: string[] = [];
  for (let i = 0; i < args.length; i += size) out.push(args.slice(i, i + size));
  return out;
}

/** The `data:` payloads of a chat stream, without the final `[DONE]`. */
export function chatChunks(plan: OutputPlan, meta: WireMeta, includeUsage: boolean): unknown[] {
  const base = { id: meta.id, object: 'chat.completion.chunk', created: meta.created, model: meta.model };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  const out: unknown[] = [];
  const hasText = plan.textChunks.length > 0;
  if (hasText || plan.toolCalls.length === 0)
    out.push(chunk({ role: 'assistant', content: '', refusal: null }));
  for (const piece of plan.textChunks) out.push(chunk({ content: piece }));
  for (const [index, call] of plan.toolCalls.entries()) {
    const head = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
    out.push(
      chunk(
        index === 0 && !hasText
          ? { role: 'assistant', content: null, tool_calls: [head] }
          : { tool_calls: [head] },
      ),
    );
    for (const piece of argumentPieces(call.arguments)) {
      out.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  }
  out.push(chunk({}, plan.finishReason));
  if (includeUsage) out.push({ ...base, choices: [], usage: chatUsage(plan.usage) });
  return out;
}
