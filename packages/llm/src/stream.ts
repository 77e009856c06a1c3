// streamStep: one model call as an async iterable of LlmEvents, straight through the model's
// `doStream` with the prompt of prompt.ts (no streamText wrapper). Tools have no `execute` (the
// worker runs them), no retries (the queue's); an abort cancels at once, and failures become an
// `error` event, never a throw.

import { InvalidArgumentError } from '@ai-sdk/provider';
import { shapeForTemplate } from '@loopline/core';
import { type ClassifiedError, classifyError } from './errors.ts';
import type { LlmEvent } from './events.ts';
import { endModelSpan, startModelSpan } from './model-tracing.ts';
import { StepNormaliser } from './normalise.ts';
import {
  type CallOptions,
  type Model,
  type PromptMemo,
  type PromptMessage,
  type StreamPart,
  type ToolSpec,
  toProviderPrompt,
  toProviderTools,
} from './prompt.ts';

export interface StepRequest {
  model: Model;
  /** System blocks: the first is the stable, cache-friendly one. Empty blocks are dropped. */
  system: string[];
  messages: PromptMessage[];
  tools: ToolSpec[];
  toolChoice?: 'auto' | 'none';
  maxOutputTokens?: number;
  temperature?: number;
  abortSignal?: AbortSignal;
  providerOptions?: CallOptions['providerOptions'];
  /** Names the call in traces (`step`, `summary`, `title`); see model-tracing.ts. */
  purpose?: string;
  /** What the server's chat template accepts (capabilities): role alternation, a system role. */
  template?: { strictAlternation?: boolean; systemRole?: boolean };
  /** The previous call's provider messages (prompt.ts PromptMemo): only new messages are converted. */
  promptMemo?: { prompt?: PromptMemo };
  /** Most characters the reply may stream (normalise.ts MODEL_REPLY_MAX_CHARS when absent). */
  maxReplyChars?: number;
  /**
   * The whole call's time budget in ms. Past it the call ends with a retryable `ETIMEDOUT` error:
   * an endpoint that sends a byte now and then never trips an idle timeout, and would otherwise
   * hold its step for as long as it likes.
   */
  timeoutMs?: number;
}

/** Streams one model request as Loopline's normalised events. */
export async function* streamStep(req: StepRequest): AsyncGenerator<LlmEvent, void, undefined> {
  const caller = req.abortSignal;
  const deadline = req.timeoutMs !== undefined ? AbortSignal.timeout(req.timeoutMs) : undefined;
  // The request and the reader stop at either; only the caller's abort is an abort.
  const signal = deadline ? (caller ? AbortSignal.any([caller, deadline]) : deadline) : caller;
  const classify = (error: unknown): ClassifiedError =>
    deadline?.aborted && !caller?.aborted
      ? {
          kind: 'retryable',
          code: 'ETIMEDOUT',
          message: `the model call did not finish within ${budgetText(req.timeoutMs ?? 0)}`,
        }
      : classifyError(error, caller);
  const normaliser = new StepNormaliser(
    caller,
    req.tools.map((t) => t.name),
    req.maxReplyChars,
  );
  const span = startModelSpan(req.model, req);
  let failure: ClassifiedError | undefined;
  let reader: ReadableStreamDefaultReader<StreamPart> | undefined;
  let drained = false;
  // The fetch has the signal too; cancelling the reader also ends a read that is waiting on a
  // server that stopped sending, whatever the fetch does with the signal.
  const onAbort = () => {
    reader?.cancel(signal?.reason).catch(() => undefined);
  };
  try {
    signal?.throwIfAborted();
    // What streamText checked before the call: an output limit below one token is a bug of the
    // caller (terminal), not something to send and have refused as a bare 400.
    const max = req.maxOutputTokens;
    if (max !== undefined && (!Number.isInteger(max) || max < 1))
      throw new InvalidArgumentError({
        argument: 'maxOutputTokens',
        message: 'Invalid argument for parameter maxOutputTokens: maxOutputTokens must be an integer >= 1',
      });
    // Strict templates: same-role runs merged, system text folded into the first user message.
    const shaped = req.template
      ? shapeForTemplate(req.system, req.messages as Parameters<typeof shapeForTemplate>[1], req.template)
      : { system: req.system, messages: req.messages };
    const tools = toProviderTools(req.tools);
    const { stream } = await req.model.doStream({
      prompt: toProviderPrompt(shaped.system, shaped.messages, req.promptMemo),
      ...(tools ? { tools, toolChoice: { type: req.toolChoice ?? 'auto' } } : {}),
      ...(req.maxOutputTokens !== undefined ? { maxOutputTokens: req.maxOutputTokens } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(req.providerOptions ? { providerOptions: req.providerOptions } : {}),
      ...(signal ? { abortSignal: signal } : {}),
    });
    reader = stream.getReader();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        drained = true;
        break;
      }
      for (const ev of normaliser.push(value)) {
        if (ev.type === 'error') {
          // An error part the cut-off connection caused: the deadline's error, not the part's.
          failure = deadline?.aborted ? classify(ev.error) : ev.error;
          yield { ...ev, error: failure };
        } else yield ev;
      }
      // After the finish the rest of the stream is read to its end (the connection goes back to
      // the pool); after an error it is cancelled.
      if (failure) break;
    }
    if (!normaliser.ended) {
      normaliser.ended = true;
      failure = signal?.aborted
        ? classify(signal.reason)
        : { kind: 'retryable', message: 'model stream ended without a finish' };
      yield { type: 'error', error: failure };
    }
  } catch (error) {
    if (!normaliser.ended) {
      normaliser.ended = true;
      failure = classify(error);
      yield { type: 'error', error: failure };
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (reader && !drained) reader.cancel().catch(() => undefined);
    endModelSpan(span, {
      finishReason: normaliser.finishReason,
      responseId: normaliser.responseId,
      responseModel: normaliser.modelId,
      usage: normaliser.usage,
      // A consumer that stopped reading before the end: the call did not complete.
      error:
        failure ??
        (normaliser.ended ? undefined : { kind: 'aborted', message: 'the caller stopped reading' }),
    });
  }
}

/** A time budget for a message: `400 ms`, `1800 s`. */
function budgetText(ms: number): string {
  return ms < 10_000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}
