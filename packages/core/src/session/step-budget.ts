// The step budgets of a user turn (docs/durability.md §6): only model calls that came back spend
// the agent's maxSteps; steps the infrastructure ended are bounded by their own caps, so a fault
// never turns into MaxStepsReachedError, and a fault that repeats forever still ends the turn.
// decide() applies the caps before anything else; afterCall() sizes a provider retry.

import { type ErrorData, errorData } from '../errors.ts';
import type { WithParts } from '../schema/message.ts';

export interface StepBudgets {
  /** Retryable provider errors in a row (LOOPLINE_MAX_PROVIDER_RETRIES) before the turn fails. */
  maxProviderRetries: number;
  /** Steps closed as interrupted in a row (LOOPLINE_MAX_INTERRUPTED_STEPS) before the turn fails. */
  maxInterruptedSteps: number;
}

/**
 * Tool calls one reply may make. What a reply holds is the model's, so possibly a tenant's own
 * endpoint's: calls past this many are recorded as errors and not run (the model sees why), so one
 * reply cannot start thousands of executions and webhook requests at once.
 */
export const MAX_TOOL_CALLS_PER_REPLY = 64;

/** The error a tool call past MAX_TOOL_CALLS_PER_REPLY is recorded with (it is not run). */
export function toolCallsOverCap(nth: number): string | undefined {
  if (nth <= MAX_TOOL_CALLS_PER_REPLY) return undefined;
  return `Not run: a reply may make at most ${MAX_TOOL_CALLS_PER_REPLY} tool calls, and this was call ${nth}. Make the remaining calls in your next reply.`;
}

/** LOOPLINE_MAX_INTERRUPTED_STEPS when the worker is given none. */
export const DEFAULT_MAX_INTERRUPTED_STEPS = 10;

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
 * Model calls since the newest real user message that reached the model and came back; interrupted
 * steps and retryable provider errors have their own caps (file header).
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
 * every time ends the session after maxInterruptedSteps of them (MaxInterruptionsReachedError).
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

/** Exponential backoff from 500 ms, capped at 30 s, never shorter than the provider's Retry-After. */
export function retryDelayMs(attempt: number, retryAfterMs: number): number {
  const backoff = Math.min(30_000, 500 * 2 ** Math.max(0, attempt - 1));
  return Math.max(retryAfterMs, backoff);
}

/** Tries per summary request when the provider answers with a retryable error (429, 5xx, network). */
export const SUMMARY_ATTEMPTS = 3;
/** A summary retry waits at most this long: the session is held compacting meanwhile. */
const SUMMARY_MAX_BACKOFF_MS = 5_000;

/**
 * After a summary request's `attempt`-th failure: the wait before the next try, or undefined when
 * there is none (not retryable, the attempts are spent, or the run was aborted). Backoff from 500 ms,
 * at least the provider's Retry-After, both capped at 5 s: a compaction holds its session, so a
 * longer wait is better spent on the ladder's next rung.
 */
export function summaryRetryDelay(
  attempt: number,
  error: { kind: string; retryAfterMs?: number | undefined },
  aborted: boolean,
): number | undefined {
  if (error.kind !== 'retryable' || attempt >= SUMMARY_ATTEMPTS || aborted) return undefined;
  const backoff = 500 * 2 ** Math.max(0, attempt - 1);
  return Math.min(SUMMARY_MAX_BACKOFF_MS, Math.max(error.retryAfterMs ?? 0, backoff));
}

/** `provider 429, retry 3/8 in 4 s` (no retry left: the next step ends the session). */
export function retryDetail(cause: string, n: number, max: number, delayMs: number): string {
  if (n >= max) return `provider ${cause}, no retries left (${n}/${max})`;
  return `provider ${cause}, retry ${n}/${max} in ${Math.max(1, Math.round(delayMs / 1000))} s`;
}

/**
 * The turn has spent a fault budget: the error that ends it, else undefined. Provider errors are
 * checked first; the error is the newest reply's own (what the provider last said), if it has one.
 */
export function budgetExceeded(messages: WithParts[], budgets: StepBudgets): ErrorData | undefined {
  if (trailingProviderErrors(messages) >= budgets.maxProviderRetries) {
    const last = [...messages].reverse().find((m) => m.info.role === 'assistant')?.info;
    const error = last?.role === 'assistant' ? last.error : undefined;
    return error ?? errorData('APIError', 'the model provider kept failing');
  }
  const interrupted = trailingInterruptedSteps(messages);
  if (interrupted >= budgets.maxInterruptedSteps) {
    return errorData('MaxInterruptionsReachedError', undefined, { interrupted });
  }
  return undefined;
}

/**
 * A compaction job that starts after `restarts` runs whose worker died or froze (BullMQ's stall
 * count of the job): at the interruption cap the turn ends, as for steps, instead of summarising
 * again; undefined while it may run.
 */
export function compactionRestartsExceeded(
  restarts: number,
  budgets: Pick<StepBudgets, 'maxInterruptedSteps'>,
): ErrorData | undefined {
  if (restarts < budgets.maxInterruptedSteps) return undefined;
  return errorData(
    'MaxInterruptionsReachedError',
    `the compaction was interrupted ${restarts} times (its worker died or lost its lock)`,
    { interrupted: restarts, compaction: true },
  );
}

export interface ProviderRetry {
  /** This retry's number in the run of retryable errors (the failed call included). */
  attempt: number;
  of: number;
  /** When the next step may call again. */
  delayMs: number;
  /** The session's status detail while it waits ("provider 429, retry 3/8 in 4 s"). */
  detail: string;
}

/**
 * A call that just failed retryably: the how-manieth retry it is, how long to wait and what the
 * status says meanwhile. `messages` is the view the call was built from (the failed reply is not
 * in it yet, hence the +1).
 */
export function providerRetry(
  messages: WithParts[],
  failure: { delayMs: number; cause: string },
  maxProviderRetries: number,
): ProviderRetry {
  const attempt = trailingProviderErrors(messages) + 1;
  const delayMs = retryDelayMs(attempt, failure.delayMs);
  return {
    attempt,
    of: maxProviderRetries,
    delayMs,
    detail: retryDetail(failure.cause, attempt, maxProviderRetries, delayMs),
  };
}
