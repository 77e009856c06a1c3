// Waiting in tests: the state a test waits for lives in real PostgreSQL, Redis, processes or
// sockets, so it polls that state with `until()` instead of sleeping a guessed time (a guess is
// too short on a loaded machine and wasted time on an idle one). `sleep()` is only for letting
// time pass on purpose (a TTL to expire, a window in which something must NOT happen); each such
// call says why in a comment.

/** Resolves after `ms`. Only for time that must pass on purpose; waiting for a state is `until()`. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `fn` until it returns something other than undefined, null or false, and returns that.
 * Throws `timed out waiting for <what>` after `timeoutMs`.
 */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 20_000,
  pollMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await fn();
    if (value !== undefined && value !== null && value !== false) return value;
    await sleep(pollMs);
  }
  throw new Error(`timed out waiting for ${what}`);
}
