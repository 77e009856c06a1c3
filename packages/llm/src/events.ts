// LlmEvent: the normalised stream of one model call, as the worker consumes it. Provider
// quirks (empty text blocks, invalid tool calls, SDK error parts) never leak past this type.

import type { FinishReason, Usage } from '@loopline/core';
import type { ClassifiedError } from './errors.ts';

export type LlmEvent =
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; text: string }
  | { type: 'text-end'; id: string }
  | { type: 'reasoning-start'; id: string }
  | { type: 'reasoning-delta'; id: string; text: string }
  | { type: 'reasoning-end'; id: string }
  | { type: 'tool-call'; callId: string; toolName: string; input: Record<string, unknown> }
  | {
      type: 'tool-call-invalid';
      callId: string;
      toolName: string;
      /** The argument text exactly as the model produced it. */
      raw: string;
      error: string;
      /** `unknown-tool` → core UnknownToolError, `invalid-input` → ToolInputError. */
      reason: 'unknown-tool' | 'invalid-input';
    }
  | {
      type: 'finish';
      finish: FinishReason;
      /** This call's usage (input excl. cache, output excl. reasoning). */
      usage: Usage;
      responseId?: string;
      modelId?: string;
    }
  | { type: 'error'; error: ClassifiedError };

export type LlmEventType = LlmEvent['type'];
