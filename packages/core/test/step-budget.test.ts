import { beforeEach, describe, expect, it } from 'vitest';
import { errorData } from '../src/errors.ts';
import {
  budgetExceeded,
  compactionRestartsExceeded,
  MAX_TOOL_CALLS_PER_REPLY,
  providerRetry,
  retryDelayMs,
  retryDetail,
  SUMMARY_ATTEMPTS,
  stepsThisTurn,
  summaryRetryDelay,
  toolCallsOverCap,
  trailingInterruptedSteps,
  trailingProviderErrors,
} from '../src/session/step-budget.ts';
import { MAX_SUBAGENT_DEPTH, MAX_TASKS_PER_STEP, taskLimitRefusal } from '../src/session/task.ts';
import { assistant, reset, user } from './build.ts';

// The step budget: only steps that reached the model and came back spend maxSteps; interrupted
// steps and retryable provider errors are bounded by their own consecutive caps.

const interrupted = () => assistant('', { finish: undefined, error: errorData('StepInterruptedError') });
const retryable = () =>
  assistant('', { finish: undefined, error: errorData('APIError', 'overloaded', { retryable: true }) });
const fatal = () =>
  assistant('', { finish: undefined, error: errorData('APIError', 'bad request', { retryable: false }) });
const toolStep = () => assistant('calling', { finish: 'tool-calls' });

beforeEach(reset);

describe('stepsThisTurn', () => {
  it('counts completed model calls since the newest real user message', () => {
    const h = [user('old'), toolStep(), assistant('done'), user('new'), toolStep(), toolStep()];
    expect(stepsThisTurn(h)).toBe(2);
  });

  it('counts every reply when no real user message is in view (cut off by a boundary)', () => {
    expect(stepsThisTurn([user('continue', { synthetic: true }), toolStep(), toolStep()])).toBe(2);
  });

  it('does not count steps closed as interrupted or ended by a retryable provider error', () => {
    const h = [user('go'), interrupted(), retryable(), interrupted(), toolStep(), retryable()];
    expect(stepsThisTurn(h)).toBe(1);
  });

  it('still counts a step that failed for good, and skips summaries and synthetic user messages', () => {
    const h = [
      user('go'),
      toolStep(),
      assistant('summary', { summary: true }),
      user('continue', { synthetic: true }),
      fatal(),
    ];
    expect(stepsThisTurn(h)).toBe(2);
  });
});

describe('trailingInterruptedSteps', () => {
  it('counts interrupted steps at the end of the turn, across retryable provider errors', () => {
    expect(trailingInterruptedSteps([user('go'), interrupted(), retryable(), interrupted()])).toBe(2);
  });

  it('is reset by a completed step and by a user message', () => {
    expect(trailingInterruptedSteps([user('go'), interrupted(), toolStep(), interrupted()])).toBe(1);
    expect(trailingInterruptedSteps([user('a'), interrupted(), user('b')])).toBe(0);
    expect(trailingInterruptedSteps([])).toBe(0);
  });

  it('is independent of trailingProviderErrors', () => {
    const h = [user('go'), retryable(), interrupted(), retryable()];
    expect(trailingInterruptedSteps(h)).toBe(1);
    expect(trailingProviderErrors(h)).toBe(2);
  });
});

describe('trailingProviderErrors', () => {
  it('counts retryable provider errors since the newest success, across interrupted steps', () => {
    expect(trailingProviderErrors([user('go'), retryable(), interrupted(), retryable()])).toBe(2);
    expect(trailingProviderErrors([user('go'), retryable(), toolStep(), retryable()])).toBe(1);
    expect(trailingProviderErrors([user('go'), retryable(), fatal()])).toBe(1);
    expect(trailingProviderErrors([user('a'), retryable(), user('b')])).toBe(0);
  });
});

describe('retryDelayMs', () => {
  it('backs off exponentially from 500 ms, capped at 30 s', () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, 0))).toEqual([500, 1_000, 2_000, 4_000]);
    expect(retryDelayMs(0, 0)).toBe(500);
    expect(retryDelayMs(20, 0)).toBe(30_000);
  });

  it("never waits less than the provider's Retry-After", () => {
    expect(retryDelayMs(1, 7_000)).toBe(7_000);
    expect(retryDelayMs(20, 45_000)).toBe(45_000);
  });
});

describe('summaryRetryDelay', () => {
  const retryable = { kind: 'retryable' };
  it('retries a retryable failure until the attempts are spent, backing off from 500 ms', () => {
    expect(SUMMARY_ATTEMPTS).toBe(3);
    expect([1, 2].map((n) => summaryRetryDelay(n, retryable, false))).toEqual([500, 1_000]);
    expect(summaryRetryDelay(SUMMARY_ATTEMPTS, retryable, false)).toBeUndefined();
  });

  it('never retries an overflow, a terminal error or an aborted run', () => {
    expect(summaryRetryDelay(1, { kind: 'overflow' }, false)).toBeUndefined();
    expect(summaryRetryDelay(1, { kind: 'terminal' }, false)).toBeUndefined();
    expect(summaryRetryDelay(1, { kind: 'aborted' }, false)).toBeUndefined();
    expect(summaryRetryDelay(1, retryable, true)).toBeUndefined();
  });

  it("waits the provider's Retry-After, but never more than 5 s (the session is held compacting)", () => {
    expect(summaryRetryDelay(1, { kind: 'retryable', retryAfterMs: 2_000 }, false)).toBe(2_000);
    expect(summaryRetryDelay(2, { kind: 'retryable', retryAfterMs: 60_000 }, false)).toBe(5_000);
  });
});

describe('retryDetail', () => {
  it('says which retry it is and when, rounded to whole seconds (at least 1)', () => {
    expect(retryDetail('429', 3, 8, 4_000)).toBe('provider 429, retry 3/8 in 4 s');
    expect(retryDetail('ECONNRESET', 1, 8, 200)).toBe('provider ECONNRESET, retry 1/8 in 1 s');
  });

  it('says so when no retry is left', () => {
    expect(retryDetail('503', 8, 8, 30_000)).toBe('provider 503, no retries left (8/8)');
  });
});

describe('budgetExceeded', () => {
  const budgets = { maxProviderRetries: 2, maxInterruptedSteps: 2 };

  it('is undefined while both budgets last', () => {
    expect(budgetExceeded([user('go'), retryable(), interrupted()], budgets)).toBeUndefined();
    expect(budgetExceeded([], budgets)).toBeUndefined();
  });

  it('ends the turn with the newest reply’s own provider error', () => {
    const error = errorData('APIError', 'still overloaded', { retryable: true });
    const last = assistant('', { finish: undefined, error });
    expect(budgetExceeded([user('go'), retryable(), last], budgets)).toEqual(error);
  });

  it('falls back to a generic APIError when no reply carries one (a budget of 0)', () => {
    expect(budgetExceeded([user('go')], { maxProviderRetries: 0, maxInterruptedSteps: 2 })).toEqual(
      errorData('APIError', 'the model provider kept failing'),
    );
  });

  it('ends the turn with MaxInterruptionsReachedError after the interrupted cap', () => {
    expect(budgetExceeded([user('go'), interrupted(), retryable(), interrupted()], budgets)).toEqual(
      errorData('MaxInterruptionsReachedError', undefined, { interrupted: 2 }),
    );
  });

  it('checks provider errors first', () => {
    const h = [user('go'), interrupted(), interrupted(), retryable(), retryable()];
    expect(budgetExceeded(h, budgets)?.name).toBe('APIError');
  });
});

describe('providerRetry', () => {
  it('numbers the retry after the errors already in the view and sizes its delay', () => {
    const view = [user('go'), toolStep(), retryable(), retryable()];
    expect(providerRetry(view, { delayMs: 0, cause: '429' }, 8)).toEqual({
      attempt: 3,
      of: 8,
      delayMs: 2_000,
      detail: 'provider 429, retry 3/8 in 2 s',
    });
  });

  it("keeps the provider's Retry-After and says when none is left", () => {
    const retry = providerRetry([user('go'), retryable()], { delayMs: 9_000, cause: '503' }, 2);
    expect(retry).toEqual({
      attempt: 2,
      of: 2,
      delayMs: 9_000,
      detail: 'provider 503, no retries left (2/2)',
    });
  });
});

describe('compactionRestartsExceeded', () => {
  it('lets a compaction run below the interruption cap and ends the turn at it', () => {
    expect(compactionRestartsExceeded(0, { maxInterruptedSteps: 10 })).toBeUndefined();
    expect(compactionRestartsExceeded(9, { maxInterruptedSteps: 10 })).toBeUndefined();
    const error = compactionRestartsExceeded(10, { maxInterruptedSteps: 10 });
    expect(error?.name).toBe('MaxInterruptionsReachedError');
    expect(error?.data).toEqual({ interrupted: 10, compaction: true });
    expect(error?.message).toMatch(/interrupted 10 times/);
  });
});

describe('the limits of one reply', () => {
  it('tool calls past MAX_TOOL_CALLS_PER_REPLY get an error and are not run', () => {
    expect(toolCallsOverCap(1)).toBeUndefined();
    expect(toolCallsOverCap(MAX_TOOL_CALLS_PER_REPLY)).toBeUndefined();
    expect(toolCallsOverCap(MAX_TOOL_CALLS_PER_REPLY + 1)).toBe(
      'Not run: a reply may make at most 64 tool calls, and this was call 65. Make the remaining calls in your next reply.',
    );
  });

  it('subagent tasks stop at 3 levels below the root and at 8 per reply', () => {
    expect(taskLimitRefusal(0, 0)).toBeUndefined();
    expect(taskLimitRefusal(MAX_SUBAGENT_DEPTH - 1, MAX_TASKS_PER_STEP - 1)).toBeUndefined();
    expect(taskLimitRefusal(MAX_SUBAGENT_DEPTH, 0)).toMatch(/at most 3 levels deep, and this session is 3/);
    expect(taskLimitRefusal(0, MAX_TASKS_PER_STEP)).toMatch(/At most 8 subagent tasks start from one reply/);
  });
});
