import { z } from 'zod';
import { storableText } from './storable.ts';

// The registry of Loopline error codes. Errors are data: stored on message rows,
// sent over SSE, and mapped to HTTP statuses only by the gateway's error plugin.
// docs/errors.md lists every code; a test keeps the two in step.

export const ErrorData = z.object({
  name: z.string(),
  message: z.string(),
  data: z.record(z.string(), z.unknown()).optional(),
});
export type ErrorData = z.infer<typeof ErrorData>;

export const ERROR_CODES = {
  ContextOverflowError:
    'The conversation no longer fits the model context window and compaction is disabled.',
  APIError: 'The model provider returned an error.',
  AbortedError: 'The step was aborted.',
  StepInterruptedError: 'The worker running this step stopped before it finished; the step was closed.',
  MaxCompactionReachedError:
    'Too many compactions without progress (or over the per-turn cap); the session stopped to avoid a loop.',
  CompactionError: 'Compaction could not bring the context under the trigger.',
  SummaryGenerationError: 'The summary model failed; a cheaper compaction rung was used.',
  CompactionNoopError:
    'The compaction found nothing new to summarise, or its result would not have shrunk the context; nothing changed.',
  MaxStepsReachedError: 'The agent reached its step limit for this turn.',
  MaxInterruptionsReachedError:
    'Too many steps in a row were interrupted (their worker died or lost its lock); the session stopped.',
  ToolError: 'A tool failed.',
  ToolInputError: 'The model called a tool with arguments that do not match its schema.',
  UnknownToolError: 'The model called a tool that does not exist.',
  WebhookRefusedError: 'The tool webhook address is private or loopback and not allowed.',
  AttachmentError:
    'An attachment of the message could not be fetched (refused address, too large, HTTP error or timeout).',
  StaleFenceError: 'A newer runner owns this session; the write was rejected.',
  ConfigError: 'The agent or tool configuration is invalid.',
  BatchItemError: 'A batch conversation could not be run to its end.',
} as const;
export type ErrorCode = keyof typeof ERROR_CODES;

/** A thrown error carrying a registry code and JSON data. */
export class LooplineError extends Error {
  readonly code: ErrorCode;
  readonly data: Record<string, unknown> | undefined;
  constructor(code: ErrorCode, message?: string, data?: Record<string, unknown>) {
    // Messages often quote upstream text (a provider's or a tool's answer): keep them storable.
    super(storableText(message ?? ERROR_CODES[code]));
    this.name = code;
    this.code = code;
    this.data = data;
  }
  toData(): ErrorData {
    return this.data
      ? { name: this.code, message: this.message, data: this.data }
      : { name: this.code, message: this.message };
  }
}

/** The stored error shape of a typed Loopline error. */
export function errorData(code: ErrorCode, message?: string, data?: Record<string, unknown>): ErrorData {
  return new LooplineError(code, message, data).toData();
}

/** Aborts and interruptions keep the assistant's real content in the model view (docs/context.md §4). */
export function isAbortLike(error: ErrorData | undefined): boolean {
  return error?.name === 'AbortedError' || error?.name === 'StepInterruptedError';
}
