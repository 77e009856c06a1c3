// Provider stream parts (LanguageModelV4, what `doStream` yields) → LlmEvents for one step. Drops
// empty text/reasoning blocks, parses tool-call arguments (unknown tools and unparsable or
// non-object arguments become `tool-call-invalid`, with the raw argument text and the same error
// text the SDK gave), and ends at the first finish, error or abort. Stateful per call; no I/O.
// Every string it passes on is storable (core storable.ts): a NUL or an unpaired surrogate in a
// reply, a tool call or an id becomes U+FFFD here, so the step's writes can never be refused for it.

import { JSONParseError } from '@ai-sdk/provider';
import { FinishReason, storableText, storableValue, usageFromSdk } from '@loopline/core';
import { classifyError, normaliseStreamError } from './errors.ts';
import type { LlmEvent } from './events.ts';
import type { StreamPart } from './prompt.ts';
import { invalidToolInputMessage, noSuchToolMessage } from './sdk-errors.ts';

type Finish = Extract<StreamPart, { type: 'finish' }>;
type ProviderUsage = Finish['usage'];

// Core's FinishReason is the one list; a reason the SDK adds later reads as `other`.
const FINISH_REASONS: ReadonlySet<string> = new Set(FinishReason.options);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/**
 * Opens a block on its first non-empty delta, so consumers never see empty blocks. A delta that
 * ends in the first half of a surrogate pair keeps it for the next delta of its block, which may
 * bring the second half (a server that splits a character across chunks).
 */
class Blocks {
  private open = new Set<string>();
  private held = new Map<string, string>();
  private readonly kind: 'text' | 'reasoning';
  constructor(kind: 'text' | 'reasoning') {
    this.kind = kind;
  }

  delta(id: string, raw: string): LlmEvent[] {
    let text = (this.held.get(id) ?? '') + raw;
    this.held.delete(id);
    if (text !== '' && isHighSurrogate(text.charCodeAt(text.length - 1))) {
      this.held.set(id, text.slice(-1));
      text = text.slice(0, -1);
    }
    return this.emit(id, storableText(text));
  }

  end(id: string): LlmEvent[] {
    // A half pair still held at the block's end had no second half: it is unpaired.
    const held = this.held.get(id);
    this.held.delete(id);
    const last = held === undefined ? [] : this.emit(id, storableText(held));
    if (!this.open.delete(id)) return last;
    return [...last, { type: `${this.kind}-end`, id }];
  }

  private emit(id: string, text: string): LlmEvent[] {
    if (text === '') return [];
    if (this.open.has(id)) return [{ type: `${this.kind}-delta`, id, text }];
    this.open.add(id);
    return [
      { type: `${this.kind}-start`, id },
      { type: `${this.kind}-delta`, id, text },
    ];
  }
}

/** The provider's usage in the SDK's LanguageModelUsage shape (core's usageFromSdk reads it). */
function sdkUsage(u: ProviderUsage) {
  const input = u.inputTokens.total;
  const output = u.outputTokens.total;
  return {
    inputTokens: input,
    inputTokenDetails: {
      noCacheTokens: u.inputTokens.noCache,
      cacheReadTokens: u.inputTokens.cacheRead,
      cacheWriteTokens: u.inputTokens.cacheWrite,
    },
    outputTokens: output,
    outputTokenDetails: { textTokens: u.outputTokens.text, reasoningTokens: u.outputTokens.reasoning },
    totalTokens: input === undefined && output === undefined ? undefined : (input ?? 0) + (output ?? 0),
  };
}

/**
 * JSON.parse that refuses `__proto__` keys and `constructor.prototype`, as the SDK's
 * secure-json-parse does: arguments come from the model and end up spread into objects.
 */
function parseArguments(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (text.includes('__proto__') || text.includes('constructor')) forbidPrototypeKeys(value);
  return value;
}

function forbidPrototypeKeys(value: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const v of value) forbidPrototypeKeys(v);
    return;
  }
  const rec = value as Record<string, unknown>;
  if (Object.hasOwn(rec, '__proto__')) throw new SyntaxError('Object contains forbidden prototype property');
  if (
    Object.hasOwn(rec, 'constructor') &&
    typeof rec.constructor === 'object' &&
    rec.constructor !== null &&
    Object.hasOwn(rec.constructor, 'prototype')
  )
    throw new SyntaxError('Object contains forbidden prototype property');
  for (const v of Object.values(rec)) forbidPrototypeKeys(v);
}

/**
 * Most characters one reply may stream (text, reasoning and tool-call arguments together) unless the
 * caller says otherwise: far above any model's output limit (a million characters is some 250,000
 * tokens), and what bounds the worker's memory and writes for a reply of an endpoint that never
 * stops (a tenant's own, or a broken one). Past it the reply ends with a terminal error.
 */
export const MODEL_REPLY_MAX_CHARS = 1_000_000;

/** The code of the terminal error that ends a reply past its character budget. */
export const REPLY_TOO_LARGE = 'REPLY_TOO_LARGE';

/** Turns one call's provider stream parts into LlmEvents (file header). */
export class StepNormaliser {
  ended = false;
  /** Characters streamed so far (text, reasoning, tool-call arguments). */
  streamed = 0;
  private readonly maxChars: number;
  /** Tool calls whose arguments came as deltas (counted there, not again at the call). */
  private readonly deltaCalls = new Set<string>();
  private text = new Blocks('text');
  private reasoning = new Blocks('reasoning');
  responseId: string | undefined;
  modelId: string | undefined;
  /** Usage of the finish part, once seen (the span reads it). */
  usage: ProviderUsage | undefined;
  finishReason: string | undefined;

  private readonly tools: ReadonlySet<string>;
  private readonly signal: AbortSignal | undefined;
  /**
   * `tools`: the names sent with the request; a call to any other is invalid. `maxChars`: the
   * reply's character budget (MODEL_REPLY_MAX_CHARS).
   */
  constructor(signal?: AbortSignal, tools: Iterable<string> = [], maxChars = MODEL_REPLY_MAX_CHARS) {
    this.signal = signal;
    this.tools = new Set(tools);
    this.maxChars = maxChars;
  }

  push(part: StreamPart): LlmEvent[] {
    if (this.ended) return [];
    if (this.overBudget(part)) {
      this.ended = true;
      return [
        {
          type: 'error',
          error: {
            kind: 'terminal',
            code: REPLY_TOO_LARGE,
            message: `the model's reply passed ${this.maxChars.toLocaleString('en-US')} characters and was cut there`,
          },
        },
      ];
    }
    switch (part.type) {
      case 'text-delta':
        return this.text.delta(part.id, part.delta);
      case 'text-end':
        return this.text.end(part.id);
      case 'reasoning-delta':
        return this.reasoning.delta(part.id, part.delta);
      case 'reasoning-end':
        return this.reasoning.end(part.id);
      case 'tool-call':
        return [
          this.toolCall(storableText(part.toolCallId), storableText(part.toolName), storableText(part.input)),
        ];
      case 'response-metadata':
        this.responseId = part.id !== undefined ? storableText(part.id) : this.responseId;
        this.modelId = part.modelId !== undefined ? storableText(part.modelId) : this.modelId;
        return [];
      case 'finish':
        return this.finish(part);
      case 'error':
        this.ended = true;
        return [{ type: 'error', error: classifyError(normaliseStreamError(part.error), this.signal) }];
      default:
        return [];
    }
  }

  /** Counts what the part streams; true once the reply is past its budget. */
  private overBudget(part: StreamPart): boolean {
    switch (part.type) {
      case 'text-delta':
      case 'reasoning-delta':
        this.streamed += part.delta.length;
        break;
      case 'tool-input-delta':
        this.deltaCalls.add(part.id);
        this.streamed += part.delta.length;
        break;
      case 'tool-call':
        if (!this.deltaCalls.has(part.toolCallId)) this.streamed += part.input.length;
        break;
      default:
        return false;
    }
    return this.streamed > this.maxChars;
  }

  private toolCall(callId: string, toolName: string, raw: string): LlmEvent {
    const invalid = (error: string, reason: 'unknown-tool' | 'invalid-input'): LlmEvent => ({
      type: 'tool-call-invalid',
      callId,
      toolName,
      raw,
      error,
      reason,
    });
    if (!this.tools.has(toolName)) {
      const available = this.tools.size > 0 ? [...this.tools] : undefined;
      return invalid(noSuchToolMessage(toolName, available), 'unknown-tool');
    }
    let input: unknown;
    try {
      // Many models send an empty string for a call without arguments.
      input = raw.trim() === '' ? {} : parseArguments(raw);
    } catch (cause) {
      const parseError = new JSONParseError({ text: raw, cause });
      return invalid(invalidToolInputMessage(toolName, parseError), 'invalid-input');
    }
    if (!isPlainObject(input)) return invalid('tool input must be a JSON object', 'invalid-input');
    // The raw text was storable; a `\u0000` escape in it becomes a NUL only once parsed.
    return { type: 'tool-call', callId, toolName, input: storableValue(input) };
  }

  private finish(part: Finish): LlmEvent[] {
    this.ended = true;
    this.usage = part.usage;
    const finish = part.finishReason.unified;
    this.finishReason = finish;
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
        usage: usageFromSdk(sdkUsage(part.usage)),
        ...(this.responseId ? { responseId: this.responseId } : {}),
        ...(this.modelId ? { modelId: this.modelId } : {}),
      },
    ];
  }
}
