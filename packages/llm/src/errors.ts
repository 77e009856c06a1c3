// Provider error classification: the one place an AI SDK / network / abort error becomes
// `retryable | overflow | terminal | aborted`. Extracts status, body, code and
// retry-after from whatever the SDK threw; the status/text rules (what counts as an overflow)
// are core's `classifyProviderError`. Callers branch on `kind`, never on message text.

import { AISDKError, APICallError, TypeValidationError } from '@ai-sdk/provider';
import { classifyProviderError, isUnsupportedText } from '@loopline/core';
import { z } from 'zod';
import { lastErrorOfRetry, StreamProviderError } from './sdk-errors.ts';

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

/** Whether a code is a transport failure's (the connection, DNS, a socket timeout), not a provider's. */
export function isNetworkCode(code: string | undefined): boolean {
  return code !== undefined && NETWORK_CODES.has(code);
}

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
  const unsupported = isUnsupportedText(f.code) || isUnsupportedText(f.body) || isUnsupportedText(f.message);
  const base = {
    // Name the cause: an operator reads this on the failed turn.
    message: unsupported ? `${UNSUPPORTED_HINT}: ${f.message}` : f.message,
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

const UNSUPPORTED_HINT =
  "the model server does not support a parameter Loopline sent (e.g. tools: set the model's " +
  'capabilities, see docs/models.md)';

/**
 * An error payload that arrived inside a stream (HTTP 200) and failed the SDK's chunk schema, or
 * that the SDK handed on as a plain object: llama.cpp `{code, message, type}`, vLLM
 * `{object: "error", message, type, code}`, OpenAI-style `{error: {message, type, code}}`, TGI
 * `{error: "text", error_type}`. Undefined when the value is not an error payload.
 */
function streamPayload(error: unknown): HttpFacts | undefined {
  const value = TypeValidationError.isInstance(error) ? error.value : error;
  if (!isRec(value) || value instanceof Error) return undefined;
  const inner = isRec(value.error) ? value.error : value;
  const message =
    str(inner.message) ?? (typeof value.error === 'string' ? value.error : undefined) ?? str(inner.detail);
  if (message === undefined) return undefined;
  const numeric = typeof inner.code === 'number' ? inner.code : Number.parseInt(str(inner.code) ?? '', 10);
  const status = numeric >= 400 && numeric <= 599 ? numeric : undefined;
  const code =
    (typeof inner.code === 'string' && status === undefined ? inner.code : undefined) ??
    str(inner.type) ??
    str(value.error_type);
  return {
    message,
    body: JSON.stringify(value),
    ...(status !== undefined ? { status } : {}),
    ...(code !== undefined ? { code } : {}),
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function networkCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; isRec(e) && depth < 5; e = e.cause, depth++) {
    const code = str(e.code);
    if (isNetworkCode(code)) return code;
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

const PROVIDER_STREAM_ERROR = Symbol.for('vercel.ai.providerStreamError');

const httpStatus = (v: unknown): number | undefined => {
  const n = typeof v === 'string' && /^\d{3}$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n >= 400 && n <= 599 ? n : undefined;
};

/**
 * A provider error object in a stream `error` part as a StreamProviderError with its status
 * (as the AI SDK's unexported normalizeStreamProviderError); anything else as it is.
 */
export function normaliseStreamError(error: unknown): unknown {
  if (
    error instanceof Error ||
    Object.prototype.toString.call(error) === '[object Error]' ||
    AISDKError.isInstance(error) ||
    StreamProviderError.isInstance(error) ||
    !isRec(error)
  )
    return error;
  const marked = (error as Record<symbol, unknown>)[PROVIDER_STREAM_ERROR] === true;
  const response = isRec(error.response) ? error.response : undefined;
  const details = marked
    ? error
    : ((isRec(response?.error) ? response.error : undefined) ?? (isRec(error.error) ? error.error : error));
  if (typeof details.message !== 'string') return error;
  const strOrNum = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? v : undefined);
  const explicit =
    httpStatus(details.statusCode) ??
    httpStatus(error.statusCode) ??
    httpStatus(details.status_code) ??
    httpStatus(error.status_code) ??
    httpStatus(details.status) ??
    httpStatus(error.status) ??
    httpStatus(details.code) ??
    httpStatus(error.code);
  const said = details.message.trim().toLowerCase();
  const inferred =
    said === 'overloaded' ||
    said === 'overloaded error' ||
    said === 'model overloaded' ||
    said === 'service unavailable'
      ? 503
      : said === 'internal server error'
        ? 500
        : undefined;
  const statusCode = explicit ?? inferred;
  const flag = (v: unknown) => (typeof v === 'boolean' ? v : undefined);
  const retryable =
    flag(details.isRetryable) ??
    flag(error.isRetryable) ??
    flag(details.is_retryable) ??
    flag(error.is_retryable);
  return new StreamProviderError({
    message: details.message,
    type:
      typeof details.type === 'string'
        ? details.type
        : typeof error.type === 'string'
          ? error.type
          : undefined,
    code: strOrNum(details.code) ?? strOrNum(error.code),
    statusCode,
    isRetryable:
      retryable ??
      (inferred !== undefined ||
        (statusCode !== undefined &&
          (statusCode === 408 || statusCode === 409 || statusCode === 429 || statusCode >= 500))),
    data: marked ? error.data : error,
  });
}

/**
 * Classifies anything a model call can throw or emit as an `error` part.
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
  const retried = lastErrorOfRetry(error);
  if (retried !== undefined) return classifyError(retried, signal);
  const refused = egressRefusal(error);
  if (refused) return { kind: 'terminal', message: messageOf(refused), code: 'EgressRefused' };
  if (APICallError.isInstance(error)) {
    // Fetch failures surface as APICallError without a status ("Cannot connect to API").
    const code = providerCode(error.data, error.responseBody) ?? networkCode(error.cause);
    // A body the SDK could not read as OpenAI's (vLLM's flat `{object: "error", message}`, TGI's
    // `{error: "…"}`) leaves a bare "Bad Request": the server's own words say more.
    const said = error.responseBody ? streamPayload(safeJson(error.responseBody))?.message : undefined;
    return classifyHttp({
      status: error.statusCode,
      body: error.responseBody,
      code,
      message: said && !error.message.includes(said) ? `${error.message}: ${said}` : error.message,
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
  const payload = streamPayload(error);
  if (payload) {
    // No status in the payload: an unexplained in-stream error is transient unless its text says otherwise.
    return classifyHttp(payload);
  }
  if (isRec(error) && typeof error.name === 'string' && TERMINAL_SDK_ERRORS.has(error.name)) {
    return { kind: 'terminal', message: messageOf(error), code: error.name };
  }
  const net = networkCode(error);
  if (net) return { kind: 'retryable', message: messageOf(error), code: net };
  // Everything else (a socket that died mid-stream: "terminated", a garbled chunk) is retryable:
  // errors are retryable by default: an unknown failure is more often transient than permanent.
  return { kind: 'retryable', message: messageOf(error) || 'unknown provider error' };
}
