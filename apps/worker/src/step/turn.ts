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

/** A step the infrastructure ended, not the model: its worker died or lost its lock, or the provider failed retryably. */
function infrastructureFailure(info: WithParts['info']): boolean {
  if (info.role !== 'assistant') return false;
  const error = info.error;
  return (
    error?.name === 'StepInterruptedError' || (error?.name === 'APIError' && error.data?.retryable === true)
  );
}

/**
 * Model calls made since the newest real user message that reached the model and came back. A
 * step closed as StepInterruptedError (a dead or frozen runner) or ended by a retryable provider
 * error does not spend maxSteps: those are bounded by trailingInterruptedSteps and
 * trailingProviderErrors instead, so infrastructure faults never turn into MaxStepsReachedError.
 */
export function stepsThisTurn(history: WithParts[]): number {
  let n = 0;
  for (const m of history.slice(turnStart(history) + 1))
    if (m.info.role === 'assistant' && !m.info.summary && !infrastructureFailure(m.info)) n++;
  return n;
}

/**
 * Steps closed as StepInterruptedError at the end of the log without a completed step in between
 * (retryable provider errors in between neither count nor reset it). A step that kills its worker
 * every time ends the session after LOOPLINE_MAX_INTERRUPTED_STEPS of them (MaxInterruptionsReachedError).
 */
export function trailingInterruptedSteps(history: WithParts[]): number {
  let n = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const info = history[i]!.info;
    if (info.role === 'user') break;
    if (info.error?.name === 'StepInterruptedError') n++;
    else if (info.role === 'assistant' && !info.error) break;
  }
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
