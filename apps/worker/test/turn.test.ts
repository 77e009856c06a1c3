import { errorData } from '@loopline/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { assistant, reset, user } from '../../../packages/core/test/build.ts';
import { stepsThisTurn, trailingInterruptedSteps, trailingProviderErrors } from '../src/step/turn.ts';

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
