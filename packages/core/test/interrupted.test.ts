import { beforeEach, describe, expect, it } from 'vitest';
import type { AssistantMessage, WithParts } from '../src/schema/message.ts';
import type { ToolPart } from '../src/schema/part.ts';
import { turnAborted, turnAbortedAfter, turnEnded } from '../src/session/control.ts';
import { interruptTool, unfinishedAssistants } from '../src/session/interrupted.ts';
import { INTERRUPTED_TOOL_OUTPUT } from '../src/session/placeholders.ts';
import { assistant, compaction, ids, p, reset, summary, user } from './build.ts';

beforeEach(reset);

// What a new runner reads of the log before it goes on: the replies a dead runner left open and
// how their calls are closed (docs/durability.md §5), and whether the turn is already over (an
// abort request, a compaction that ran while the turn was aborted).

const abortError = { name: 'AbortedError', message: 'aborted' };

/** A reply a dead runner left: neither finish nor error. */
function openReply(text: string): WithParts {
  const m = assistant(text);
  const { finish: _, ...info } = m.info as AssistantMessage;
  return { info, parts: m.parts };
}

describe('unfinishedAssistants', () => {
  it('are the replies with neither finish nor error', () => {
    const msgs = [
      user('go'),
      openReply('half'),
      assistant('done'),
      assistant('failed', { finish: undefined, error: { name: 'APIError', message: '500' } }),
      summary('S', 'c1', { finish: undefined }),
    ];
    expect(ids(unfinishedAssistants(msgs))).toEqual([msgs[1]!.info.id, msgs[4]!.info.id]);
    expect(unfinishedAssistants([user('x')])).toEqual([]);
  });
});

describe('interruptTool', () => {
  const part = (init: ReturnType<typeof p.toolPending>) =>
    ({ ...init, id: 'prt_1', sessionId: 'ses_test', messageId: 'a1' }) as ToolPart;

  it('closes a running call as an interrupted error from its start, a pending one from now', () => {
    const running = interruptTool(part(p.toolPending('bash', 'running')), 50);
    expect(running.state).toEqual({
      status: 'error',
      input: { q: 1 },
      error: INTERRUPTED_TOOL_OUTPUT,
      interrupted: true,
      time: { start: 1, end: 50 },
    });
    const pending = interruptTool(part(p.toolPending('bash', 'pending')), 50);
    expect(pending.state).toMatchObject({ status: 'error', interrupted: true, time: { start: 50, end: 50 } });
  });

  it('leaves a finished call as it is (never re-run, never rewritten)', () => {
    const done = part(p.tool('bash', 'out'));
    expect(interruptTool(done, 50)).toBe(done);
    const failed = part(p.toolError('bash', 'boom'));
    expect(interruptTool(failed, 50)).toBe(failed);
  });
});

describe('turnEnded', () => {
  it('is over after a final reply to the newest user message, or after an abort', () => {
    expect(turnEnded([user('go'), assistant('answer')])).toBe(true);
    expect(turnEnded([user('go'), assistant('half', { error: abortError })])).toBe(true);
  });

  it('is not over while tools are asked for, a reply is open, or a user message waits', () => {
    expect(turnEnded([user('go'), assistant([p.tool('ls', 'x')], { finish: 'tool-calls' })])).toBe(false);
    expect(turnEnded([user('go'), openReply('half')])).toBe(false);
    expect(turnEnded([user('go'), assistant('answer'), user('more')])).toBe(false);
    expect(turnEnded([assistant('answer')])).toBe(false); // no user message
  });

  it('does not take a summary for the turn’s reply', () => {
    const msgs = [user('go', { id: 'u1' }), compaction({}, { id: 'c1' }), summary('S', 'c1')];
    expect(turnEnded(msgs)).toBe(false);
  });
});

describe('turnAbortedAfter', () => {
  it('is true when the reply that aborted the turn came after the given message', () => {
    const msgs = [
      user('go', { id: 'u1' }),
      compaction({}, { id: 'c1' }),
      assistant('half', { error: abortError }),
    ];
    expect(turnAborted(msgs)).toBe(true);
    expect(turnAbortedAfter(msgs, 'c1')).toBe(true);
  });

  it('is false for an abort before the message, a turn not aborted, or a message not in the log', () => {
    const before = [user('go'), assistant('half', { error: abortError }), compaction({}, { id: 'c1' })];
    expect(turnAbortedAfter(before, 'c1')).toBe(false);
    const running = [user('go'), compaction({}, { id: 'c1' }), assistant('answer')];
    expect(turnAbortedAfter(running, 'c1')).toBe(false);
    expect(turnAbortedAfter(before, 'c-missing')).toBe(false);
  });
});
