import type { WithParts } from '@loopline/core';

// Facts about the current user turn that the shell needs besides decide().

/** Index of the newest user message that a person wrote (not a synthetic continue/marker). */
function turnStart(history: WithParts[]): number {
  for (let i = history.length - 1; i >= 0; i--) {
    const info = history[i]!.info;
    if (info.role === 'user' && !info.synthetic) return i;
  }
  return -1;
}

/** Model calls made since the newest real user message. */
export function stepsThisTurn(history: WithParts[]): number {
  let n = 0;
  for (const m of history.slice(turnStart(history) + 1))
    if (m.info.role === 'assistant' && !m.info.summary) n++;
  return n;
}

/** Retryable provider errors at the end of the log, newest first, without a success in between. */
export function trailingProviderErrors(history: WithParts[]): number {
  let n = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const info = history[i]!.info;
    if (info.role === 'user') break;
    if (info.error?.name === 'APIError' && info.error.data?.retryable === true) n++;
    else if (info.role === 'assistant' && !info.error) break;
  }
  return n;
}

export function retryDelayMs(attempt: number, retryAfterMs: number): number {
  const backoff = Math.min(30_000, 500 * 2 ** Math.max(0, attempt - 1));
  return Math.max(retryAfterMs, backoff);
}
