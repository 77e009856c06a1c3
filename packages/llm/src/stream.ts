// streamStep: one model call (one loop step) as an async iterable of LlmEvents, on top of
// streamText. Tools are declared without `execute` (the worker runs them), retries are off
// (the queue retries), and provider failures become an `error` event: it never throws.

import { type ModelMessage as CoreModelMessage, shapeForTemplate } from '@loopline/core';
import type { JSONSchema7, LanguageModel, ModelMessage, SystemModelMessage } from 'ai';
import { jsonSchema, streamText, type ToolSet, tool } from 'ai';
import { classifyError } from './errors.ts';
import type { LlmEvent } from './events.ts';
import { StepNormaliser } from './normalise.ts';

export interface ToolSpec {
  name: string;
  description?: string;
  /** JSON Schema of the input; must be an object schema. */
  inputSchema: Record<string, unknown>;
}

type ProviderOptions = NonNullable<Parameters<typeof streamText>[0]['providerOptions']>;

export interface StepRequest {
  model: LanguageModel;
  /** System blocks: the first is the stable, cache-friendly one. Empty blocks are dropped. */
  system: string[];
  messages: ModelMessage[];
  tools: ToolSpec[];
  toolChoice?: 'auto' | 'none';
  maxOutputTokens?: number;
  temperature?: number;
  abortSignal?: AbortSignal;
  providerOptions?: ProviderOptions;
  /** Names the call in traces (`step`, `summary`, `title`); see model-tracing.ts. */
  purpose?: string;
  /** What the server's chat template accepts (capabilities): role alternation, a system role. */
  template?: { strictAlternation?: boolean; systemRole?: boolean };
}

function instructions(blocks: string[]): string | SystemModelMessage[] | undefined {
  const kept = blocks.filter((b) => b.trim() !== '');
  if (kept.length === 0) return undefined;
  if (kept.length === 1) return kept[0];
  return kept.map((content) => ({ role: 'system', content }));
}

export function toolSet(tools: ToolSpec[]): ToolSet | undefined {
  if (tools.length === 0) return undefined;
  const set: ToolSet = {};
  for (const t of tools) {
    // The schema comes from validated agent config (core's JsonSchemaObject); arguments are JSON-parsed
    // by the SDK but not validated against it: the worker validates before running the tool.
    set[t.name] = tool({
      description: t.description,
      inputSchema: jsonSchema<Record<string, unknown>>(t.inputSchema as JSONSchema7),
    });
  }
  return set;
}

export async function* streamStep(req: StepRequest): AsyncGenerator<LlmEvent, void, undefined> {
  const signal = req.abortSignal;
  const normaliser = new StepNormaliser(signal);
  try {
    signal?.throwIfAborted();
    const tools = toolSet(req.tools);
    // Strict templates: same-role runs merged, system text folded into the first user message.
    const shaped = req.template
      ? shapeForTemplate(req.system, req.messages as CoreModelMessage[], req.template)
      : { system: req.system, messages: req.messages };
    const result = streamText({
      model: req.model,
      instructions: instructions(shaped.system),
      messages: shaped.messages as ModelMessage[],
      tools,
      toolChoice: tools ? (req.toolChoice ?? 'auto') : undefined,
      maxOutputTokens: req.maxOutputTokens,
      temperature: req.temperature,
      abortSignal: signal,
      providerOptions: req.providerOptions,
      maxRetries: 0,
      // Spans only when model tracing is on (model-tracing.ts), and never with the prompt or the
      // answer in them: usage, model, timings.
      telemetry: { functionId: req.purpose ?? 'step', recordInputs: false, recordOutputs: false },
      // Errors arrive as `error` parts; the default handler would print them to the console.
      onError: () => {},
    });
    for await (const part of result.stream) {
      yield* normaliser.push(part);
      if (normaliser.ended) return;
    }
  } catch (error) {
    if (!normaliser.ended) yield { type: 'error', error: classifyError(error, signal) };
    return;
  }
  if (!normaliser.ended) {
    yield signal?.aborted
      ? { type: 'error', error: classifyError(signal.reason, signal) }
      : { type: 'error', error: { kind: 'retryable', message: 'model stream ended without a finish' } };
  }
}
