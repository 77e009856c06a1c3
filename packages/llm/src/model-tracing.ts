// OpenTelemetry spans of a model call, in the shape the AI SDK's telemetry gave them: an agent
// span named by purpose (`invoke_agent step`, `… title`, `… summary`), a child of the active span
// (the worker's job span, or a compaction span), and under it the provider call (`chat <model
// id>`, kind client), both with the GenAI semantic-convention attributes: provider, model, request
// settings, response id and model, finish reason and token usage (`gen_ai.usage.*`). Never the
// prompt or the answer. On only when the process turned tracing on (@loopline/telemetry
// startTracing) and enableModelTracing ran.

import { endClientSpan, startClientSpan } from '@loopline/telemetry';
import type { Model } from './prompt.ts';

let enabled = false;

/** Model spans for every call of this process (idempotent); the worker calls it when tracing is on. */
export function enableModelTracing(): void {
  enabled = true;
}

type Spans = {
  agent: NonNullable<ReturnType<typeof startClientSpan>>;
  chat: ReturnType<typeof startClientSpan>;
};

/** Starts the span of a model request (tracing on), with the GenAI request attributes. */
export function startModelSpan(
  model: Model,
  req: {
    purpose?: string | undefined;
    maxOutputTokens?: number | undefined;
    temperature?: number | undefined;
  },
): Spans | undefined {
  if (!enabled) return undefined;
  const purpose = req.purpose ?? 'step';
  const common = {
    'gen_ai.provider.name': model.provider.split('.')[0] ?? model.provider,
    'gen_ai.request.model': model.modelId,
    'gen_ai.agent.name': purpose,
    ...(req.maxOutputTokens !== undefined ? { 'gen_ai.request.max_tokens': req.maxOutputTokens } : {}),
    ...(req.temperature !== undefined ? { 'gen_ai.request.temperature': req.temperature } : {}),
  };
  const agent = startClientSpan(
    `invoke_agent ${purpose}`,
    { 'gen_ai.operation.name': 'invoke_agent', ...common },
    { kind: 'internal' },
  );
  if (!agent) return undefined;
  const chat = startClientSpan(
    `chat ${model.modelId}`,
    { 'gen_ai.operation.name': 'chat', ...common },
    { parent: agent },
  );
  return { agent, chat };
}

export interface ModelSpanEnd {
  finishReason?: string | undefined;
  responseId?: string | undefined;
  responseModel?: string | undefined;
  usage?:
    | {
        inputTokens: {
          total: number | undefined;
          cacheRead: number | undefined;
          cacheWrite: number | undefined;
        };
        outputTokens: { total: number | undefined; reasoning: number | undefined };
      }
    | undefined;
  /** The classified error's kind and message, when the call failed or was aborted. */
  error?: { kind: string; message: string } | undefined;
}

/** Ends a model request's span with its outcome and usage. */
export function endModelSpan(spans: Spans | undefined, end: ModelSpanEnd): void {
  if (!spans) return;
  const u = end.usage;
  const attrs: Record<string, string | number | string[]> = {};
  const put = (key: string, v: string | number | string[] | undefined) => {
    if (v !== undefined) attrs[key] = v;
  };
  put('gen_ai.response.finish_reasons', end.finishReason ? [end.finishReason] : undefined);
  put('gen_ai.response.id', end.responseId);
  put('gen_ai.response.model', end.responseModel);
  put('gen_ai.usage.input_tokens', u?.inputTokens.total);
  put('gen_ai.usage.output_tokens', u?.outputTokens.total);
  put('gen_ai.usage.cache_read.input_tokens', u?.inputTokens.cacheRead);
  put('gen_ai.usage.cache_creation.input_tokens', u?.inputTokens.cacheWrite);
  put('gen_ai.usage.reasoning.output_tokens', u?.outputTokens.reasoning);
  put('error.type', end.error?.kind);
  endClientSpan(spans.chat, attrs, end.error?.message);
  endClientSpan(spans.agent, attrs, end.error?.message);
}
