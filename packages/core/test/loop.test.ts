import { beforeEach, describe, expect, it } from 'vitest';
import { AgentConfig, type AgentConfigInput, type RuntimeFlags } from '../src/config.ts';
import { errorData } from '../src/errors.ts';
import { filterCompacted } from '../src/session/history.ts';
import { type AfterCallInput, afterCall, type DecideInput, decide } from '../src/session/loop.ts';
import { compactionsInARow, compactionVerdict, grewSinceCompaction } from '../src/session/loop-guard.ts';
import { compactionsThisTurn, pendingCompaction, turnOf } from '../src/session/turn.ts';
import { assistant, compaction, ids, p, reset, summary, user } from './build.ts';

beforeEach(reset);

// 100k context, 32k output: usable = trigger = 68,000.
const agent = (extra: Partial<AgentConfigInput> = {}) =>
  AgentConfig.parse({ model: 'openai/gpt-5', limits: { context: 100_000, output: 32_000 }, ...extra });
const flags: RuntimeFlags = { disableAutocompact: false, disablePrune: false };

function run(messages: DecideInput['messages'], extra: Partial<DecideInput> = {}) {
  return decide({ messages, agent: agent(), flags, stepsThisTurn: 0, estimate: 1_000, ...extra });
}

describe('decide: exit', () => {
  it('exits without a user message', () => {
    expect(run([])).toEqual({ type: 'exit', reason: 'no-user-message' });
  });

  it('exits after a plain reply', () => {
    const u = user('hi');
    expect(run([u, assistant('hello', { parentId: u.info.id })])).toEqual({
      type: 'exit',
      reason: 'finished',
    });
  });

  it('exits after a reply that finished with an error (no retry loop here)', () => {
    const msgs = [
      user('hi'),
      assistant('', { finish: 'error', error: { name: 'APIError', message: 'bad' } }),
    ];
    expect(run(msgs).type).toBe('exit');
  });

  it('calls again when the reply finished with tool-calls', () => {
    const u = user('list files', { id: 'u1' });
    const msgs = [u, assistant([p.tool('ls', 'a b')], { finish: 'tool-calls' })];
    expect(run(msgs, { stepsThisTurn: 1 })).toEqual({ type: 'call', parentId: 'u1', lastStep: false });
  });

  it('calls again when a finished reply still has unresolved tool parts', () => {
    const msgs = [
      user('go', { id: 'u1' }),
      assistant([p.toolPending('bash', 'running')], { finish: 'stop' }),
    ];
    expect(run(msgs).type).toBe('call');
  });

  it('calls again when a reply finished with stop but holds completed tool calls', () => {
    const msgs = [user('go', { id: 'u1' }), assistant([p.tool('ls', 'a b')], { finish: 'stop' })];
    expect(run(msgs).type).toBe('call');
  });

  it('calls again after an interrupted step and after an unfinished one', () => {
    expect(run([user('go'), assistant('half', { finish: 'interrupted' })]).type).toBe('call');
    expect(run([user('go'), assistant('half', { finish: undefined })]).type).toBe('call');
  });

  it('calls when a user message is newer than the last reply', () => {
    const msgs = [user('hi'), assistant('hello'), user('more', { id: 'u3' })];
    expect(run(msgs)).toEqual({ type: 'call', parentId: 'u3', lastStep: false });
  });

  it('calls for a first message', () => {
    expect(run([user('hi', { id: 'u1' })])).toEqual({ type: 'call', parentId: 'u1', lastStep: false });
  });

  it('exits after a manual compaction (the summary is the newest reply)', () => {
    const msgs = filterCompacted([
      user('hi'),
      assistant('a'),
      compaction({ auto: false }, { id: 'c1' }),
      summary('S', 'c1'),
    ]);
    expect(run(msgs)).toEqual({ type: 'exit', reason: 'finished' });
  });

  it('compares by seq, not by position in the model view', () => {
    // View order [c1, s1, u2, a2]: the tail is placed after the summary but is older.
    const log = [
      user('one', { id: 'u2' }),
      assistant('two', { id: 'a2' }),
      compaction({ tailStartId: 'u2' }, { id: 'c1' }),
      summary('S', 'c1', { id: 's1' }),
      user('continue', { id: 'u3', synthetic: true }),
    ];
    const view = filterCompacted(log);
    expect(ids(view)).toEqual(['c1', 's1', 'u2', 'a2', 'u3']);
    expect(run(view)).toEqual({ type: 'call', parentId: 'u3', lastStep: false });
  });
});

describe('decide: compaction', () => {
  it('runs a pending compaction before anything else', () => {
    const msgs = [user('hi'), assistant('hello'), compaction({}, { id: 'c1' })];
    const c = msgs[2]!;
    expect(run(msgs, { estimate: 99_000 })).toEqual({
      type: 'run-compaction',
      messageId: 'c1',
      partId: c.parts[0]!.id,
    });
  });

  it('runs the newest pending compaction', () => {
    const msgs = [user('hi'), compaction({}, { id: 'c1' }), compaction({}, { id: 'c2' })];
    expect(run(msgs)).toMatchObject({ type: 'run-compaction', messageId: 'c2' });
  });

  it('creates a compaction when the estimate reaches the trigger', () => {
    const msgs = [user('hi'), assistant([p.tool('read', 'x')], { finish: 'tool-calls' })];
    expect(run(msgs, { estimate: 68_000 })).toEqual({
      type: 'create-compaction',
      overflow: false,
      iteration: 1,
      streak: 1,
    });
    expect(run(msgs, { estimate: 67_999 }).type).toBe('call');
  });

  it('marks overflow when the unanswered newest message is the user request', () => {
    expect(run([user('huge paste')], { estimate: 90_000 })).toEqual({
      type: 'create-compaction',
      overflow: true,
      iteration: 1,
      streak: 1,
    });
  });

  it('does not compact again until the context grew by the margin', () => {
    const msgs = [user('hi'), assistant([p.tool('read', 'x')], { finish: 'tool-calls' })];
    // triggerRatio 0.8: trigger 54,400; margin 0.1 × 54,400 = 5,440 tokens of growth needed.
    const a = agent({ compaction: { triggerRatio: 0.8 } });
    const at = (estimate: number, after: number) =>
      decide({
        messages: msgs,
        agent: a,
        flags,
        stepsThisTurn: 1,
        estimate,
        lastCompactionTokensAfter: after,
      });
    expect(at(58_000, 55_000).type).toBe('call');
    expect(at(60_500, 55_000).type).toBe('create-compaction');
    // A prompt that cannot fit the window compacts anyway (bounded by maxIterations).
    expect(at(69_000, 68_000).type).toBe('create-compaction');
  });

  it('fails with MaxCompactionReachedError after maxIterations compactions in a row without progress', () => {
    const log = [
      user('do it', { id: 'u1' }),
      compaction({}, { id: 'c1' }),
      summary('S1', 'c1'),
      compaction({}, { id: 'c2' }),
      summary('S2', 'c2'),
      compaction({}, { id: 'c3' }),
      summary('S3', 'c3'),
      user('Continue', { synthetic: true }),
    ];
    const action = run(log, { estimate: 90_000 });
    expect(action).toMatchObject({
      type: 'fail',
      error: { name: 'MaxCompactionReachedError', data: { compactions: 3, limit: 'maxIterations' } },
    });
  });

  it('lets a long turn compact again and again as long as each compaction is followed by a completed step', () => {
    const log: ReturnType<typeof user>[] = [user('a long task', { id: 'u1' })];
    for (let i = 1; i <= 6; i++) {
      log.push(compaction({ iteration: i, streak: 1 }, { id: `c${i}` }), summary(`S${i}`, `c${i}`));
      log.push(user('Continue', { synthetic: true }));
      log.push(assistant([p.tool('bash', 'out')], { finish: 'tool-calls' }));
    }
    expect(run(filterCompacted(log), { estimate: 90_000 })).toEqual({
      type: 'create-compaction',
      overflow: false,
      iteration: 7,
      streak: 1,
    });
  });

  it('does not count interrupted, failed or rejected steps as progress', () => {
    const log = [
      user('do it', { id: 'u1' }),
      assistant([p.tool('bash', 'out')], { finish: 'tool-calls' }),
      compaction({ streak: 1 }, { id: 'c1' }),
      summary('S1', 'c1'),
      assistant('half', { finish: 'interrupted', error: { name: 'StepInterruptedError', message: 'x' } }),
      compaction({ streak: 2 }, { id: 'c2' }),
      summary('S2', 'c2'),
      assistant('', { finish: 'error', error: { name: 'ContextOverflowError', message: 'too long' } }),
    ];
    expect(compactionsInARow(log)).toBe(2);
    const c = agent().compaction;
    expect(compactionVerdict({ messages: filterCompacted(log), compaction: c })).toMatchObject({
      type: 'create-compaction',
      streak: 3,
    });
    const three = [...log, compaction({ streak: 3 }, { id: 'c3' }), summary('S3', 'c3')];
    expect(compactionVerdict({ messages: filterCompacted(three), compaction: c })).toMatchObject({
      type: 'fail',
    });
  });

  it('counts the streak across a boundary that cut the earlier compactions out of view', () => {
    const view = filterCompacted([
      user('do it', { id: 'u1' }),
      compaction({ iteration: 3, streak: 3 }, { id: 'c3' }),
      summary('S3', 'c3'),
      user('Continue', { synthetic: true }),
    ]);
    expect(compactionsInARow(view)).toBe(3);
    expect(compactionsThisTurn(view)).toBe(3);
    expect(run(view, { estimate: 90_000 })).toMatchObject({
      type: 'fail',
      error: { name: 'MaxCompactionReachedError' },
    });
  });

  it('caps compactions per user turn only when maxCompactionsPerTurn is set', () => {
    const view = filterCompacted([
      user('do it', { id: 'u1' }),
      compaction({ iteration: 4, streak: 1 }, { id: 'c4' }),
      summary('S4', 'c4'),
      assistant([p.tool('read', 'x')], { finish: 'tool-calls' }),
    ]);
    expect(run(view, { estimate: 90_000 })).toMatchObject({ type: 'create-compaction', iteration: 5 });
    const capped = agent({ compaction: { maxCompactionsPerTurn: 4 } });
    expect(
      decide({ messages: view, agent: capped, flags, stepsThisTurn: 1, estimate: 90_000 }),
    ).toMatchObject({
      type: 'fail',
      error: { name: 'MaxCompactionReachedError', data: { compactions: 4, limit: 'maxCompactionsPerTurn' } },
    });
    // A new user turn starts a new count.
    const next = [...view, assistant('done'), user('next', { id: 'u9' })];
    expect(
      decide({ messages: next, agent: capped, flags, stepsThisTurn: 0, estimate: 90_000 }),
    ).toMatchObject({ type: 'create-compaction', iteration: 1 });
  });

  it('ends the turn with ContextOverflowError when the system prompt and tools alone reach the trigger', () => {
    const msgs = [user('hi')];
    expect(run(msgs, { estimate: 90_000, overhead: 70_000 })).toMatchObject({
      type: 'fail',
      error: { name: 'ContextOverflowError', data: { overhead: 70_000, trigger: 68_000 } },
    });
    expect(run(msgs, { estimate: 90_000, overhead: 10_000 }).type).toBe('create-compaction');
  });

  it('the provider-rejection path uses the same verdict', () => {
    const log = [
      user('do it', { id: 'u1' }),
      assistant('', { finish: 'error', error: { name: 'ContextOverflowError', message: 'too long' } }),
    ];
    const c = agent().compaction;
    expect(compactionVerdict({ messages: log, compaction: c, rejected: true })).toEqual({
      type: 'create-compaction',
      overflow: true,
      iteration: 1,
      streak: 1,
    });
    expect(
      compactionVerdict({ messages: log, compaction: { ...c, auto: false }, rejected: true }),
    ).toMatchObject({ type: 'fail', error: { name: 'ContextOverflowError' } });
  });

  it('with automatic compaction off, calls below the window and fails above it', () => {
    const off = agent({ compaction: { auto: false } });
    const msgs = [user('hi')];
    expect(decide({ messages: msgs, agent: off, flags, stepsThisTurn: 0, estimate: 68_000 }).type).toBe(
      'call',
    );
    expect(decide({ messages: msgs, agent: off, flags, stepsThisTurn: 0, estimate: 68_001 })).toMatchObject({
      type: 'fail',
      error: { name: 'ContextOverflowError' },
    });
    const disabled = { ...flags, disableAutocompact: true };
    expect(
      decide({ messages: msgs, agent: agent(), flags: disabled, stepsThisTurn: 0, estimate: 90_000 }).type,
    ).toBe('fail');
  });
});

describe('decide: steps', () => {
  it('marks the maxSteps-th step as the last', () => {
    const msgs = [user('go', { id: 'u1' }), assistant([p.tool('ls', 'x')], { finish: 'tool-calls' })];
    const a = agent({ maxSteps: 3 });
    const at = (steps: number) =>
      decide({ messages: msgs, agent: a, flags, stepsThisTurn: steps, estimate: 10 });
    expect(at(1)).toEqual({ type: 'call', parentId: 'u1', lastStep: false });
    expect(at(2)).toEqual({ type: 'call', parentId: 'u1', lastStep: true });
    expect(at(3)).toMatchObject({ type: 'fail', error: { name: 'MaxStepsReachedError' } });
  });
});

describe('turn helpers', () => {
  it('turnOf starts at the newest message the user typed', () => {
    const msgs = [
      user('a', { id: 'u1' }),
      assistant('b'),
      user('c', { id: 'u3' }),
      compaction({}, { id: 'c4' }),
    ];
    expect(ids(turnOf(msgs))).toEqual(['u3', 'c4']);
    expect(ids(turnOf([compaction({}, { id: 'c5' })]))).toEqual(['c5']);
  });

  it('compactionsThisTurn counts compaction parts since the turn start', () => {
    const msgs = [compaction({}, { id: 'c0' }), user('a'), compaction(), summary('S', 'x'), compaction()];
    expect(compactionsThisTurn(msgs)).toBe(2);
    expect(compactionsThisTurn([user('a'), compaction({ iteration: 2 }), compaction()])).toBe(3);
  });

  it('pendingCompaction ignores compactions with a completed summary', () => {
    const msgs = [compaction({}, { id: 'c1' }), summary('S', 'c1')];
    expect(pendingCompaction(msgs)).toBeUndefined();
  });
});

describe('decide: fault budgets', () => {
  const retryable = () =>
    assistant('', { finish: undefined, error: errorData('APIError', 'overloaded', { retryable: true }) });
  const interrupted = () => assistant('', { finish: undefined, error: errorData('StepInterruptedError') });
  const budgets = { maxProviderRetries: 2, maxInterruptedSteps: 3 };

  it('fails the turn once the provider retries are spent, before anything else', () => {
    const msgs = [user('hi'), retryable(), retryable()];
    expect(run(msgs, { budgets })).toEqual({
      type: 'fail',
      error: errorData('APIError', 'overloaded', { retryable: true }),
    });
    // Without budgets the same log just calls again.
    expect(run(msgs).type).toBe('call');
  });

  it('fails the turn once interrupted steps in a row reach the cap', () => {
    const msgs = [user('hi'), interrupted(), interrupted(), interrupted()];
    expect(run(msgs, { budgets })).toEqual({
      type: 'fail',
      error: errorData('MaxInterruptionsReachedError', undefined, { interrupted: 3 }),
    });
    expect(run(msgs.slice(0, 3), { budgets }).type).toBe('call');
  });

  it('counts the steps of the turn itself when not given, faults excluded', () => {
    const msgs = [
      user('go', { id: 'u1' }),
      assistant([p.tool('ls', 'a')], { finish: 'tool-calls' }),
      interrupted(),
      retryable(),
    ];
    const small = AgentConfig.parse({
      model: 'openai/gpt-5',
      limits: { context: 100_000, output: 32_000 },
      maxSteps: 2,
    });
    const input = { messages: msgs, agent: small, flags, estimate: 1_000 };
    expect(decide(input)).toEqual({ type: 'call', parentId: 'u1', lastStep: true });
    const more = [...msgs, assistant([p.tool('ls', 'b')], { finish: 'tool-calls' })];
    expect(decide({ ...input, messages: more })).toEqual({
      type: 'fail',
      error: errorData('MaxStepsReachedError', undefined, { steps: 2 }),
    });
  });
});

describe('afterCall', () => {
  const base = (result: AfterCallInput['result'], extra: Partial<AfterCallInput> = {}): AfterCallInput => ({
    result,
    userAborted: false,
    messages: [user('hi')],
    agent: agent(),
    flags,
    maxProviderRetries: 4,
    ...extra,
  });

  it('continues with the next step after a completed call', () => {
    expect(afterCall(base({ type: 'continue' }))).toEqual({ type: 'next' });
  });

  it('stops on a lost stream, and ends the turn when the user aborted it', () => {
    expect(afterCall(base({ type: 'lost' }))).toEqual({ type: 'stop' });
    expect(afterCall(base({ type: 'lost' }, { userAborted: true }))).toEqual({ type: 'end-aborted-turn' });
  });

  it('ends the turn with the error of a call that failed for good', () => {
    const error = errorData('APIError', 'bad request', { retryable: false });
    expect(afterCall(base({ type: 'failed', error }))).toEqual({ type: 'fail', error });
  });

  it('schedules a retry numbered after the errors already in the view', () => {
    const retryable = assistant('', {
      finish: undefined,
      error: errorData('APIError', 'overloaded', { retryable: true }),
    });
    const out = afterCall(
      base({ type: 'retry', delayMs: 0, cause: '429' }, { messages: [user('hi'), retryable] }),
    );
    expect(out).toEqual({
      type: 'retry',
      attempt: 2,
      of: 4,
      delayMs: 1_000,
      detail: 'provider 429, retry 2/4 in 1 s',
    });
  });

  it('turns a provider rejection into the same compaction decide() would make, marked rejected', () => {
    const msgs = [user('huge paste')];
    expect(afterCall(base({ type: 'overflow' }, { messages: msgs }))).toEqual({
      type: 'create-compaction',
      overflow: true,
      iteration: 1,
      streak: 1,
      rejected: true,
    });
  });

  it('ends a rejected turn with ContextOverflowError when automatic compaction is off', () => {
    const out = afterCall(base({ type: 'overflow' }, { flags: { ...flags, disableAutocompact: true } }));
    expect(out).toMatchObject({
      type: 'fail',
      error: { name: 'ContextOverflowError', message: 'the provider rejected the request as too long' },
    });
  });

  it('is bounded by the loop guard like the pre-call check', () => {
    const msgs = [user('go'), compaction({ streak: 3 }), summary('s', 'x')];
    expect(afterCall(base({ type: 'overflow' }, { messages: msgs }))).toMatchObject({
      type: 'fail',
      error: { name: 'MaxCompactionReachedError' },
    });
  });
});

describe('grewSinceCompaction', () => {
  it('is true without a previous compaction, and from growthMargin × trigger on', () => {
    expect(grewSinceCompaction(50_000, undefined, 0.1, 60_000)).toBe(true);
    expect(grewSinceCompaction(56_000, 50_000, 0.1, 60_000)).toBe(true);
    expect(grewSinceCompaction(55_999, 50_000, 0.1, 60_000)).toBe(false);
  });
});
