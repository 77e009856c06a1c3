import { beforeEach, describe, expect, it } from 'vitest';
import { AgentConfig, type RuntimeFlags } from '../src/config.ts';
import { errorData } from '../src/errors.ts';
import type { WithParts } from '../src/schema/message.ts';
import type { ToolPart } from '../src/schema/part.ts';
import {
  deferredCalls,
  isAbortedReply,
  pendingClientCalls,
  queueView,
  turnAborted,
} from '../src/session/control.ts';
import { type DecideInput, decide } from '../src/session/loop.ts';
import {
  builtinToolDefinitions,
  canRunAsSubagent,
  childAnswer,
  taskToolDefinition,
} from '../src/session/task.ts';
import { toModelMessages } from '../src/session/to-model-messages.ts';
import { estimateTokenizer } from '../src/session/tokens.ts';
import { resolveToolPart } from '../src/session/tool-result.ts';
import { assistant, compaction, ids, p, reset, summary, user } from './build.ts';

beforeEach(reset);

const agent = AgentConfig.parse({ model: 'openai/gpt-5', limits: { context: 100_000, output: 32_000 } });
const flags: RuntimeFlags = { disableAutocompact: false, disablePrune: false };
const run = (messages: WithParts[], extra: Partial<DecideInput> = {}) =>
  decide({ messages, agent, flags, stepsThisTurn: 1, estimate: 1_000, ...extra });

/** A running tool part marked as deferred (what the task tool and client tools write). */
function deferred(tool: string, metadata: Record<string, unknown>, callId = `call_${tool}`) {
  return {
    type: 'tool' as const,
    tool,
    callId,
    tokens: 0,
    state: { status: 'running' as const, input: { q: 1 }, metadata, time: { start: 5 } },
  };
}

const aborted = (parts: Parameters<typeof assistant>[0], info: Parameters<typeof assistant>[1] = {}) =>
  assistant(parts, { finish: undefined, error: errorData('AbortedError'), ...info });

describe('decide: waiting on deferred calls', () => {
  it('waits (no model call) while a subagent task is running', () => {
    const msgs = [
      user('research this', { id: 'u1' }),
      assistant([deferred('task', { awaiting: 'subagent', childSessionId: 'ses_child' })], {
        finish: 'tool-calls',
      }),
    ];
    const action = run(msgs);
    expect(action.type).toBe('wait');
    expect(action).toMatchObject({
      calls: [{ tool: 'task', awaiting: 'subagent', childSessionId: 'ses_child', callId: 'call_task' }],
    });
  });

  it('waits on client calls, with their deadline, even when a steer message arrived meanwhile', () => {
    const msgs = [
      user('pick a file', { id: 'u1' }),
      assistant([p.tool('ls', 'a b'), deferred('pick', { awaiting: 'client', deadline: 99 })], {
        finish: 'tool-calls',
      }),
      user('hurry up', { midRun: true }),
    ];
    expect(run(msgs)).toMatchObject({ type: 'wait', calls: [{ tool: 'pick', deadline: 99 }] });
  });

  it('waits before running a pending compaction or compacting on overflow', () => {
    const msgs = [
      user('go'),
      assistant([deferred('pick', { awaiting: 'client' })], { finish: 'tool-calls' }),
    ];
    expect(run(msgs, { estimate: 99_000 }).type).toBe('wait');
  });

  it('calls again once the deferred call has its result', () => {
    const msgs = [
      user('go', { id: 'u1' }),
      assistant([p.tool('task', 'the answer')], { finish: 'tool-calls' }),
    ];
    expect(run(msgs)).toEqual({ type: 'call', parentId: 'u1', lastStep: false });
  });

  it('ignores running parts without the deferred marker, and replies closed with an error', () => {
    expect(run([user('go'), assistant([p.toolPending('bash', 'running')], { finish: 'stop' })]).type).toBe(
      'call',
    );
    const closed = [
      user('go'),
      assistant([deferred('pick', { awaiting: 'client' })], {
        finish: 'tool-calls',
        error: errorData('StepInterruptedError'),
      }),
    ];
    expect(deferredCalls(closed)).toEqual([]);
  });
});

describe('decide: abort', () => {
  it('exits after an aborted reply newer than the last user message', () => {
    const msgs = [user('write a poem', { id: 'u1' }), aborted(['Roses are'])];
    expect(run(msgs)).toEqual({ type: 'exit', reason: 'aborted' });
  });

  it('exits after an empty abort marker (aborted while queued or between steps)', () => {
    const msgs = [user('go'), assistant([p.tool('ls', 'x')], { finish: 'tool-calls' }), aborted([])];
    expect(run(msgs)).toEqual({ type: 'exit', reason: 'aborted' });
  });

  it('starts a new turn when a user message follows the aborted reply', () => {
    const msgs = [user('go'), aborted(['half']), user('try again', { id: 'u3' })];
    expect(run(msgs, { stepsThisTurn: 0 })).toEqual({ type: 'call', parentId: 'u3', lastStep: false });
  });

  it('a compaction queued before the abort (and its continue message) does not resume the turn', () => {
    const msgs = [
      user('go', { id: 'u1' }),
      aborted(['half']),
      compaction({}, { id: 'c1' }),
      summary('S', 'c1'),
      user('Continue if you have next steps', { synthetic: true }),
    ];
    expect(run(msgs)).toEqual({ type: 'exit', reason: 'aborted' });
    expect(turnAborted([aborted([])])).toBe(false); // no user message: nothing to end
  });

  it('keeps the aborted content in the model view (abort-like errors with real content)', () => {
    const msgs = [user('go'), aborted(['partial answer']), user('again')];
    expect(JSON.stringify(toModelMessages(msgs))).toContain('partial answer');
    expect(toModelMessages([user('go'), aborted([])])).toHaveLength(1);
    expect(isAbortedReply(msgs[1]!)).toBe(true);
  });
});

describe('queueView (midRunMessages: queue)', () => {
  it('holds a mid-run message while the turn works', () => {
    const u1 = user('task one', { id: 'u1' });
    const a1 = assistant([p.tool('ls', 'x')], { finish: 'tool-calls' });
    const u2 = user('and then this', { id: 'u2', midRun: true });
    const a2 = assistant([p.tool('ls', 'y')], { finish: 'tool-calls' });
    const { view, held } = queueView([u1, a1, u2, a2]);
    expect(ids(view)).toEqual(['u1', a1.info.id, a2.info.id]);
    expect(ids(held)).toEqual(['u2']);
    // The turn goes on for u1: the next call answers u1, not the held message.
    expect(run(view)).toEqual({ type: 'call', parentId: 'u1', lastStep: false });
  });

  it('releases it once the turn ends: it becomes a new turn after the final reply', () => {
    const u1 = user('task one', { id: 'u1' });
    const a1 = assistant([p.tool('ls', 'x')], { finish: 'tool-calls' });
    const u2 = user('and then this', { id: 'u2', midRun: true });
    const a2 = assistant('done with one', { finish: 'stop' });
    const { view, held } = queueView([u1, a1, u2, a2]);
    expect(held).toEqual([]);
    expect(ids(view)).toEqual(['u1', a1.info.id, a2.info.id, 'u2']);
    expect(view[3]!.info.seq).toBeGreaterThan(a2.info.seq);
    expect(view[3]!.info.seq).toBeLessThan(a2.info.seq + 1);
    // The exit check sees a user message newer than the final reply: a new turn.
    expect(run(view, { stepsThisTurn: 0 })).toEqual({ type: 'call', parentId: 'u2', lastStep: false });
    // The stored message is untouched.
    expect(u2.info.seq).toBeLessThan(a2.info.seq);
    // and once answered, the loop exits.
    const a3 = assistant('done with two', { finish: 'stop' });
    const after = queueView([u1, a1, u2, a2, a3]).view;
    expect(ids(after)).toEqual(['u1', a1.info.id, a2.info.id, 'u2', a3.info.id]);
    expect(run(after)).toEqual({ type: 'exit', reason: 'finished' });
  });

  it('in steer mode (no queueView) the same log delivers the message at once', () => {
    const u1 = user('task one', { id: 'u1' });
    const a1 = assistant([p.tool('ls', 'x')], { finish: 'tool-calls' });
    const u2 = user('and then this', { id: 'u2', midRun: true });
    expect(run([u1, a1, u2])).toEqual({ type: 'call', parentId: 'u2', lastStep: false });
    const steered = JSON.stringify(toModelMessages([u1, a1, u2], { steer: true }));
    expect(steered).toContain('<system-reminder>');
  });

  it('keeps the order of several released messages', () => {
    const log = [
      user('one', { id: 'u1' }),
      assistant([p.tool('ls', 'x')], { finish: 'tool-calls' }),
      user('two', { id: 'u2', midRun: true }),
      user('three', { id: 'u3', midRun: true }),
      assistant('final', { finish: 'stop', id: 'a5' }),
    ];
    const { view } = queueView(log);
    expect(ids(view).slice(-3)).toEqual(['a5', 'u2', 'u3']);
    expect(view[3]!.info.seq).toBeLessThan(view[4]!.info.seq);
    expect(run(view, { stepsThisTurn: 0 })).toMatchObject({ type: 'call', parentId: 'u3' });
  });

  it('does not hold a message that came after the final reply (before the session went idle)', () => {
    const log = [
      user('one', { id: 'u1' }),
      assistant('answer', { finish: 'stop' }),
      user('two', { id: 'u2', midRun: true }),
    ];
    const { view, held } = queueView(log);
    expect(held).toEqual([]);
    expect(view).toEqual(log);
    expect(run(view, { stepsThisTurn: 0 })).toMatchObject({ type: 'call', parentId: 'u2' });
  });

  it('an aborted turn leaves its queued message in place (the turn is over, nothing is replayed)', () => {
    const log = [
      user('one', { id: 'u1' }),
      assistant([p.tool('ls', 'x')], { finish: 'tool-calls' }),
      user('two', { id: 'u2', midRun: true }),
      aborted(['partial']),
    ];
    const { view, held } = queueView(log);
    expect(held).toEqual([]);
    expect(ids(view)).toEqual(ids(log));
    expect(run(view)).toEqual({ type: 'exit', reason: 'aborted' });
  });

  it('holds a message sent before the first reply of the turn', () => {
    const { view, held } = queueView([user('one', { id: 'u1' }), user('two', { id: 'u2', midRun: true })]);
    expect(ids(view)).toEqual(['u1']);
    expect(ids(held)).toEqual(['u2']);
  });
});

describe('client calls and late results', () => {
  it('lists pending client calls of finished replies', () => {
    const msgs = [
      user('go'),
      assistant([deferred('pick', { awaiting: 'client', deadline: 10 }, 'c1'), p.tool('ls', 'x')], {
        finish: 'tool-calls',
      }),
    ];
    expect(pendingClientCalls(msgs)).toEqual([
      { callId: 'c1', tool: 'pick', input: { q: 1 }, createdAt: 5, deadline: 10 },
    ]);
  });

  it('resolveToolPart completes (keeping running metadata), truncates, or errors', () => {
    const call = {
      ...deferred('task', { awaiting: 'subagent', childSessionId: 's1' }),
      id: 'prt_1',
      sessionId: 's',
      messageId: 'm',
    } as ToolPart;
    const opts = {
      now: 9,
      outputId: 'out_1',
      toolOutput: { maxLines: 2, maxBytes: 1000, direction: 'head' as const, retentionDays: 1 },
      tokenizer: estimateTokenizer,
    };
    const done = resolveToolPart(call, { output: 'answer' }, opts);
    expect(done.part.state).toMatchObject({
      status: 'completed',
      output: 'answer',
      metadata: { childSessionId: 's1' },
      time: { start: 5, end: 9 },
    });
    expect(done.part.tokens).toBeGreaterThan(0);
    expect(done.full).toBeUndefined();
    const long = resolveToolPart(call, { output: 'a\nb\nc\nd' }, opts);
    expect(long.full).toEqual({ outputId: 'out_1', content: 'a\nb\nc\nd' });
    expect(long.part.state).toMatchObject({ status: 'completed', truncated: { outputId: 'out_1' } });
    const failed = resolveToolPart(call, { error: 'timed out' }, opts);
    expect(failed.part.state).toMatchObject({ status: 'error', error: 'timed out' });
  });
});

describe('task tool', () => {
  it('is sent only to agents that list it; only subagent/all agents run as subagents', () => {
    expect(builtinToolDefinitions([], ['x']).map((t) => t.name)).toEqual(['read_output']);
    expect(builtinToolDefinitions(['lookup', 'task'], []).map((t) => t.name)).toEqual([
      'read_output',
      'task',
    ]);
    expect(taskToolDefinition([]).description).toContain('No subagents');
    expect(canRunAsSubagent({ mode: 'primary' })).toBe(false);
    expect(canRunAsSubagent({ mode: 'subagent' })).toBe(true);
    expect(canRunAsSubagent({ mode: 'all' })).toBe(true);
  });

  it('names the available subagents', () => {
    expect(taskToolDefinition(['explore', 'review']).description).toContain('explore, review');
  });

  it("childAnswer: the newest reply's text, or the child's error, or aborted", () => {
    const log = [user('q'), assistant('first'), assistant(['final', 'answer'])];
    expect(childAnswer({ status: 'idle', error: null }, log)).toEqual({
      ok: true,
      output: 'final\n\nanswer',
    });
    expect(
      childAnswer({ status: 'error', error: errorData('MaxStepsReachedError') }, [user('q')]),
    ).toMatchObject({ ok: false, error: expect.stringContaining('MaxStepsReachedError') });
    expect(childAnswer({ status: 'idle', error: null }, [user('q'), aborted(['half'])])).toMatchObject({
      ok: false,
      error: expect.stringContaining('aborted'),
    });
  });
});
