// Polling helpers shared by the e2e and fault tests: the state they wait for lives in real
// PostgreSQL, Redis or processes, so tests poll it instead of sleeping a guessed time.

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
