// Provider error classification: the one place an AI SDK / network / abort error becomes
// `retryable | overflow | terminal | aborted` (STYLE.md 11). Extracts status, body, code and
// retry-after from whatever the SDK threw; the status/text rules (what counts as an overflow)
// are core's `classifyProviderError`. Callers branch on `kind`, never on message text.

import { classifyProviderError } from '@loopline/core';
import { APICallError, RetryError, StreamProviderError } from 'ai';
import { z } from 'zod';

export const ClassifiedError = z.object({
  kind: z.enum(['retryable', 'overflow', 'terminal', 'aborted']),
  status: z.number().int().optional(),
  message: z.string(),
  /** From `retry-after-ms` / `retry-after` response headers. */
  retryAfterMs: z.number().nonnegative().optional(),
  /** Provider error code (`context_length_exceeded`, `rate_limit_exceeded`) or network code (`ECONNRESET`). */
  code: z.string().optional(),
});
export type ClassifiedError = z.infer<typeof ClassifiedError>;
export type ErrorKind = ClassifiedError['kind'];

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** SDK errors that mean the request itself is wrong: retrying cannot help. */
const TERMINAL_SDK_ERRORS = new Set([
  'AI_InvalidPromptError',
  'AI_InvalidArgumentError',
  'AI_UnsupportedFunctionalityError',
  'AI_LoadAPIKeyError',
  'AI_LoadSettingError',
  'AI_NoSuchModelError',
]);

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null;
const str = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;

/** `retry-after-ms` (ms) wins over `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(
  headers: Record<string, string> | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  const ms = Number.parseFloat(lower['retry-after-ms'] ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  const raw = lower['retry-after'];
  if (raw === undefined) return undefined;
  const seconds = Number(raw);
  if (raw.trim() !== '' && Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The provider's error code from a parsed `data` object or a JSON body (`{error:{code,type}}`). */
function providerCode(data: unknown, body: string | undefined): string | undefined {
  let source = data;
  if (!isRec(source) && body) {
    try {
      source = JSON.parse(body);
    } catch {
      source = undefined;
    }
  }
  if (!isRec(source)) return undefined;
  const inner = isRec(source.error) ? source.error : source;
  return str(inner.code) ?? str(inner.type);
}

interface HttpFacts {
  status?: number;
  body?: string;
  code?: string;
  message: string;
  headers?: Record<string, string>;
}

function classifyHttp(f: HttpFacts): ClassifiedError {
  const base = {
    message: f.message,
    ...(f.status !== undefined ? { status: f.status } : {}),
    ...(f.code !== undefined ? { code: f.code } : {}),
  };
  let kind: ClassifiedError['kind'] = classifyProviderError(f);
  // An exhausted quota answers 429 too, but waiting will not refill it.
  if (f.status === 429 && f.code === 'insufficient_quota') kind = 'terminal';
  // 409 (conflict) and 425 (too early) are transient; the SDK marks them retryable as well.
  else if (kind === 'terminal' && (f.status === 409 || f.status === 425)) kind = 'retryable';
  if (kind !== 'retryable') return { kind, ...base };
  const after = retryAfterMs(f.headers);
  return { kind, ...base, ...(after !== undefined ? { retryAfterMs: after } : {}) };
}

function networkCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; isRec(e) && depth < 5; e = e.cause, depth++) {
    const code = str(e.code);
    if (code && NETWORK_CODES.has(code)) return code;
  }
  return undefined;
}

/** The egress gate refused the endpoint (packages/egress): retrying cannot change its mind. */
const EGRESS_CODES = new Set(['ERR_EGRESS_REFUSED', 'ERR_EGRESS_TOO_LARGE']);

function egressRefusal(error: unknown): Rec | undefined {
  for (let e: unknown = error, depth = 0; isRec(e) && depth < 6; e = e.cause, depth++) {
    if (EGRESS_CODES.has(str(e.code) ?? '')) return e;
  }
  return undefined;
}

function isAbortError(error: unknown): boolean {
  return isRec(error) && (error.name === 'AbortError' || error.name === 'ResponseAborted');
}

const messageOf = (error: unknown): string =>
  error instanceof Error
    ? error.message
    : isRec(error) && typeof error.message === 'string'
      ? error.message
      : String(error);

/**
 * Classifies anything a `streamText` call can throw or emit as an `error` part.
 * Pass the call's abort signal: once it fired, every error is an abort.
 */
export function classifyError(error: unknown, signal?: AbortSignal): ClassifiedError {
  if (signal?.aborted || isAbortError(error)) {
    const reason = signal?.reason;
    return {
      kind: 'aborted',
      message: reason instanceof Error ? reason.message : messageOf(error) || 'aborted',
    };
  }
  if (RetryError.isInstance(error)) return classifyError(error.lastError, signal);
  const refused = egressRefusal(error);
  if (refused) return { kind: 'terminal', message: messageOf(refused), code: 'EgressRefused' };
  if (APICallError.isInstance(error)) {
    // Fetch failures surface as APICallError without a status ("Cannot connect to API").
    const code = providerCode(error.data, error.responseBody) ?? networkCode(error.cause);
    return classifyHttp({
      status: error.statusCode,
      body: error.responseBody,
      code,
      message: error.message,
      headers: error.responseHeaders,
    });
  }
  if (StreamProviderError.isInstance(error)) {
    return classifyHttp({
      status: error.statusCode,
      code: str(error.code) ?? error.type,
      message: error.message,
    });
  }
  if (isRec(error) && typeof error.name === 'string' && TERMINAL_SDK_ERRORS.has(error.name)) {
    return { kind: 'terminal', message: messageOf(error), code: error.name };
  }
  const net = networkCode(error);
  if (net) return { kind: 'retryable', message: messageOf(error), code: net };
  // Everything else (a socket that died mid-stream: "terminated", a garbled chunk) is retryable:
  // errors are retryable by default (STYLE.md 11).
  return { kind: 'retryable', message: messageOf(error) || 'unknown provider error' };
}
