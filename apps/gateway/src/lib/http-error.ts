// Errors the gateway raises itself. Each carries an HTTP status and a stable snake_case code;
// the errors plugin renders every error as {"error": {"code", "message", "details"?}}.

export const HTTP_ERROR_CODES = {
  validation_error: 400,
  bad_request: 400,
  invalid_json: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  session_busy: 409,
  session_not_waiting: 409,
  tool_call_answered: 409,
  idempotency_conflict: 409,
  batch_running: 409,
  tool_in_use: 409,
  payload_too_large: 413,
  input_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
} as const;
export type HttpErrorCode = keyof typeof HTTP_ERROR_CODES;

export class HttpError extends Error {
  readonly statusCode: number;
  readonly code: HttpErrorCode;
  readonly details: unknown;
  constructor(code: HttpErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = 'HttpError';
    this.code = code;
    this.statusCode = HTTP_ERROR_CODES[code];
    this.details = details;
  }
}

/** A 404 naming what was not found. */
export const notFound = (what: string, id: string): HttpError =>
  new HttpError('not_found', `${what} ${JSON.stringify(id)} not found`);

export interface Issue {
  path: string;
  message: string;
  code?: string;
}

/** A 400 from zod issues found after the route schema (resolved configs, cross-field checks). */
export function validationError(
  message: string,
  issues: readonly { path: readonly PropertyKey[]; message: string; code?: string }[],
  prefix = '',
): HttpError {
  return new HttpError('validation_error', message, {
    issues: issues.map((i) => ({
      path: `${prefix}/${i.path.map(String).join('/')}`,
      message: i.message,
      ...(i.code ? { code: i.code } : {}),
    })),
  });
}
