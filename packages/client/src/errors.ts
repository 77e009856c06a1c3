// Every non-2xx answer of the API becomes a LooplineError carrying the problem body
// ({"error": {"code", "message", "details"?}}), so callers branch on `code`, never on text.

export interface Problem {
  code: string;
  message: string;
  details?: unknown;
}

export class LooplineError extends Error {
  /** HTTP status (0 when the request never got an answer). */
  readonly status: number;
  /** Stable machine-readable code: validation_error, not_found, session_busy, rate_limited, … */
  readonly code: string;
  readonly details: unknown;
  /** Seconds to wait before retrying, from Retry-After (429, 503). */
  readonly retryAfter: number | undefined;
  constructor(status: number, problem: Problem, retryAfter?: number) {
    super(problem.message);
    this.name = 'LooplineError';
    this.status = status;
    this.code = problem.code;
    this.details = problem.details;
    this.retryAfter = retryAfter;
  }
}

function isProblem(value: unknown): value is { error: Problem } {
  const error = (value as { error?: Problem } | null)?.error;
  return typeof error?.code === 'string' && typeof error.message === 'string';
}

/** The LooplineError of a failed response (its body read as the problem, or described from the status). */
export async function errorOf(res: Response): Promise<LooplineError> {
  const text = await res.text().catch(() => '');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const retry = Number(res.headers.get('retry-after'));
  const problem = isProblem(body)
    ? body.error
    : { code: `http_${res.status}`, message: `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}` };
  return new LooplineError(res.status, problem, Number.isFinite(retry) && retry > 0 ? retry : undefined);
}
