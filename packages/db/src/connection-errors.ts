// Which PostgreSQL failures mean "the connection went away" (a restart, a failover,
// pg_terminate_backend, the server not accepting connections yet) rather than "this statement is
// wrong". Only the first kind is worth retrying as is: a new connection will do.

/** Socket-level codes node-postgres passes through from Node's net module. */
const SOCKET_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * SQLSTATEs of a lost or refused connection: class 08 (connection exception), 57P01–57P03
 * (admin_shutdown, crash_shutdown, cannot_connect_now) and 53300 (too_many_connections).
 */
const SQLSTATES = /^(08\d{3}|57P0[123]|53300)$/;

/** node-postgres' and kysely's own messages when the socket closes under a client. */
const MESSAGES =
  /Connection terminated|connection error and is not queryable|Client was closed|connection has been discarded/i;

/** Whether an error means PostgreSQL was unreachable (socket codes, connection SQLSTATEs). */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || SQLSTATES.test(code))) return true;
  if (MESSAGES.test(error.message)) return true;
  // AggregateError from a dual-stack connect (both ::1 and 127.0.0.1 refused).
  if (error instanceof AggregateError) return error.errors.some(isConnectionError);
  return false;
}

export interface RetryOptions {
  /** Give up after this many attempts (default 30). */
  attempts?: number;
  /** Wait between attempts, doubled each time up to maxDelayMs (default 200 ms → 5 s). */
  delayMs?: number;
  maxDelayMs?: number;
  onRetry?: (error: unknown, attempt: number, waitMs: number) => void;
}

/** Runs fn again while it fails with a connection error; any other error is thrown at once. */
export async function retryOnConnectionError<T>(fn: () => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const attempts = opts.attempts ?? 30;
  const maxDelay = opts.maxDelayMs ?? 5000;
  let wait = opts.delayMs ?? 200;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (attempt >= attempts || !isConnectionError(error)) throw error;
      opts.onRetry?.(error, attempt, wait);
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, maxDelay);
    }
  }
}
