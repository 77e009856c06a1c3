// AI SDK stream parts → LlmEvents for one step. Drops empty text/reasoning blocks, turns
// invalid or unknown tool calls into `tool-call-invalid` (with the raw argument text), and
// ends at the first finish, error or abort. Stateful per call; never performs I/O.

import { FinishReason, usageFromSdk } from '@loopline/core';
import { type LanguageModelUsage, NoSuchToolError, type TextStreamPart, type ToolSet } from 'ai';
import { classifyError } from './errors.ts';
import type { LlmEvent } from './events.ts';

// Core's FinishReason is the one list; a reason the SDK adds later reads as `other`.
const FINISH_REASONS: ReadonlySet<string> = new Set(FinishReason.options);

const errorText = (e: unknown): string =>
  e instanceof Error ? e.message : typeof e === 'string' ? e : JSON.stringify(e);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Opens a block on its first non-empty delta, so consumers never see empty blocks. */
class Blocks {
  private open = new Set<string>();
  private readonly kind: 'text' | 'reasoning';
  constructor(kind: 'text' | 'reasoning') {
    this.kind = kind;
  }

  delta(id: string, text: string): LlmEvent[] {
    if (text === '') return [];
    const out: LlmEvent[] = [];
    if (!this.open.has(id)) {
      this.open.add(id);
      out.push({ type: `${this.kind}-start`, id });
    }
    out.push({ type: `${this.kind}-delta`, id, text });
    return out;
  }

  end(id: string): LlmEvent[] {
    if (!this.open.delete(id)) return [];
    return [{ type: `${this.kind}-end`, id }];
  }
}

export class StepNormaliser {
  ended = false;
  private text = new Blocks('text');
  private reasoning = new Blocks('reasoning');
  private rawInput = new Map<string, string>();
  private invalid = new Set<string>();
  private step: { finish?: FinishReason; usage?: LanguageModelUsage; responseId?: string; modelId?: string } =
    {};

  private readonly signal: AbortSignal | undefined;
  constructor(signal?: AbortSignal) {
    this.signal = signal;
  }

  push(part: TextStreamPart<ToolSet>): LlmEvent[] {
    if (this.ended) return [];
    switch (part.type) {
      case 'text-delta':
        return this.text.delta(part.id, part.text);
      case 'text-end':
        return this.text.end(part.id);
      case 'reasoning-delta':
        return this.reasoning.delta(part.id, part.text);
      case 'reasoning-end':
        return this.reasoning.end(part.id);
      case 'tool-input-start':
        this.rawInput.set(part.id, '');
        return [];
      case 'tool-input-delta':
        this.rawInput.set(part.id, (this.rawInput.get(part.id) ?? '') + part.delta);
        return [];
      case 'tool-call':
        return this.toolCall(part);
      case 'tool-error':
        // Invalid calls are reported once, from their tool-call part.
        if (this.invalid.has(part.toolCallId)) return [];
        this.invalid.add(part.toolCallId);
        return [this.invalidCall(part.toolCallId, part.toolName, part.input, part.error)];
      case 'finish-step':
        this.step = {
          finish: part.finishReason,
          usage: part.usage,
          responseId: part.response.id,
          modelId: part.response.modelId,
        };
        return [];
      case 'finish':
        return this.finish(part.finishReason, part.totalUsage);
      case 'error':
        this.ended = true;
        return [{ type: 'error', error: classifyError(part.error, this.signal) }];
      case 'abort':
        this.ended = true;
        return [
          { type: 'error', error: { ...classifyError(this.signal?.reason ?? part.reason), kind: 'aborted' } },
        ];
      default:
        return [];
    }
  }

  private toolCall(part: Extract<TextStreamPart<ToolSet>, { type: 'tool-call' }>): LlmEvent[] {
    if (part.invalid) {
      this.invalid.add(part.toolCallId);
      return [this.invalidCall(part.toolCallId, part.toolName, part.input, part.error)];
    }
    if (!isPlainObject(part.input)) {
      this.invalid.add(part.toolCallId);
      return [
        this.invalidCall(part.toolCallId, part.toolName, part.input, 'tool input must be a JSON object'),
      ];
    }
    return [{ type: 'tool-call', callId: part.toolCallId, toolName: part.toolName, input: part.input }];
  }

  private invalidCall(callId: string, toolName: string, input: unknown, error: unknown): LlmEvent {
    const raw =
      this.rawInput.get(callId) ?? (typeof input === 'string' ? input : (JSON.stringify(input) ?? ''));
    return {
      type: 'tool-call-invalid',
      callId,
      toolName,
      raw,
      error: errorText(error),
      reason: NoSuchToolError.isInstance(error) ? 'unknown-tool' : 'invalid-input',
    };
  }

  private finish(reason: FinishReason, total: LanguageModelUsage): LlmEvent[] {
    this.ended = true;
    const finish = this.step.finish ?? reason;
    // A server that ends a stream with finish_reason "error" and no error payload: nothing was
    // finished, so it is an error (transient: nothing says the request itself was wrong).
    if (finish === 'error') {
      return [
        {
          type: 'error',
          error: {
            kind: 'retryable',
            message: 'the model server ended the stream with finish_reason "error"',
          },
        },
      ];
    }
    return [
      {
        type: 'finish',
        finish: FINISH_REASONS.has(finish) ? finish : 'other',
        usage: usageFromSdk(this.step.usage ?? total),
        ...(this.step.responseId ? { responseId: this.step.responseId } : {}),
        ...(this.step.modelId ? { modelId: this.step.modelId } : {}),
      },
    ];
  }
}
