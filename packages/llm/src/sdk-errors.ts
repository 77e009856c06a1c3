// The few errors of the AI SDK's `ai` package that Loopline raises or recognises, without loading
// that package: the worker talks to the provider's `doStream` directly, and `ai` (its bundle, the
// Vercel gateway provider and OIDC client it pulls in) would only cost memory in every process
// (bench/profile-findings.md round 9). Same names and `Symbol.for` markers as the SDK's classes, so
// `isInstance` checks on either side agree; the messages are the SDK's (packages/llm/test checks).

import { AISDKError, getErrorMessage } from '@ai-sdk/provider';

const STREAM_PROVIDER_ERROR = 'AI_StreamProviderError';
const streamProviderMarker = Symbol.for(`vercel.ai.error.${STREAM_PROVIDER_ERROR}`);

/** An error a provider reported after its response stream had started (the SDK's class of it). */
export class StreamProviderError extends AISDKError {
  readonly type: string | undefined;
  readonly code: string | number | undefined;
  readonly statusCode: number | undefined;
  readonly isRetryable: boolean;
  readonly data: unknown;

  constructor(opts: {
    message: string;
    type?: string | undefined;
    code?: string | number | undefined;
    statusCode?: number | undefined;
    isRetryable: boolean;
    data?: unknown;
  }) {
    super({ name: STREAM_PROVIDER_ERROR, message: opts.message });
    (this as unknown as Record<symbol, boolean>)[streamProviderMarker] = true;
    this.type = opts.type;
    this.code = opts.code;
    this.statusCode = opts.statusCode;
    this.isRetryable = opts.isRetryable;
    this.data = opts.data;
  }

  static override isInstance(error: unknown): error is StreamProviderError {
    return AISDKError.hasMarker(error, `vercel.ai.error.${STREAM_PROVIDER_ERROR}`);
  }
}

const retryMarker = Symbol.for('vercel.ai.error.AI_RetryError');

/**
 * The last error of the SDK's RetryError (thrown by `generateText`/`streamText` after their own
 * retries; Loopline's own calls never retry in the SDK), undefined for anything else.
 */
export function lastErrorOfRetry(error: unknown): unknown {
  if (typeof error !== 'object' || error === null) return undefined;
  const marked = (error as Record<symbol, unknown>)[retryMarker] === true;
  return marked ? (error as { lastError?: unknown }).lastError : undefined;
}

/** The SDK's NoSuchToolError message: the model called a tool the request did not offer. */
export function noSuchToolMessage(toolName: string, availableTools: readonly string[] | undefined): string {
  return `Model tried to call unavailable tool '${toolName}'. ${
    availableTools === undefined
      ? 'No tools are available.'
      : `Available tools: ${availableTools.join(', ')}.`
  }`;
}

/** The SDK's InvalidToolInputError message: the arguments of a call are not valid JSON. */
export function invalidToolInputMessage(toolName: string, cause: unknown): string {
  return `Invalid input for tool ${toolName}: ${getErrorMessage(cause)}`;
}
