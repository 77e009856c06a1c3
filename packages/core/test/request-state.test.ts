import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import type { WithParts } from '../src/schema/message.ts';
import { filterCompacted } from '../src/session/history.ts';
import { type RequestState, requestMessages } from '../src/session/request-state.ts';
import type { ToModelOptions } from '../src/session/to-model-messages.ts';
import { toRequestMessages } from '../src/session/tool-pairs.ts';
import { assistant, p, reset, user } from './build.ts';
import { build, opArb } from './random-log.ts';

beforeEach(reset);

// requestMessages continues the previous step's conversion: whatever the log, carrying the state
// from step to step must give exactly what a fresh toRequestMessages of each view gives.

/** The log with some call ids made equal (servers that reuse ids): the pair check must repair them. */
function reuseIds(log: WithParts[], every: number): WithParts[] {
  if (every === 0) return log;
  let n = 0;
  return log.map((m) => ({
    info: m.info,
    parts: m.parts.map((part) =>
      part.type === 'tool' && ++n % every === 0 ? { ...part, callId: `call_${n - 1}` } : part,
    ),
  }));
}

describe('requestMessages', () => {
  it('equals a fresh conversion at every step of a random log', () => {
    let repaired = 0;
    fc.assert(
      fc.property(
        fc.array(opArb, { maxLength: 40 }),
        fc.boolean(),
        fc.boolean(),
        fc.constantFrom(0, 0, 2, 3),
        (ops, steer, resendsReasoning, every) => {
          reset();
          const log = reuseIds(build(ops), every);
          const opts: ToModelOptions = { steer, resendsReasoning };
          let state: RequestState | undefined;
          // Each prefix of the log is what a step would see after the appends so far.
          for (let k = 0; k <= log.length; k++) {
            const view = filterCompacted(log.slice(0, k));
            const got = requestMessages(view, opts, state);
            expect(got.messages).toEqual(toRequestMessages(view, opts).messages);
            expect(got.problems).toEqual(toRequestMessages(view, opts).problems);
            state = got.state;
            if (got.problems.length > 0) repaired++;
          }
        },
      ),
      { numRuns: 500 },
    );
    // The reused ids did reach the repair path.
    expect(repaired).toBeGreaterThan(0);
  });

  it('converts only the appended messages when the view grew', () => {
    const a = [user('one'), assistant([p.stepStart(), p.tool('bash', 'out', { callId: 'c1' })])];
    const first = requestMessages(a);
    const b = [...a, user('two')];
    const second = requestMessages(b, {}, first.state);
    // The first messages are the same objects: taken from the state, not converted again.
    expect(second.messages.slice(0, first.messages.length)).toEqual(first.messages);
    for (let i = 0; i < first.messages.length; i++) expect(second.messages[i]).toBe(first.messages[i]);
    expect(second.messages).toEqual(toRequestMessages(b).messages);
  });

  it('converts afresh when the view changed, the options changed, or the state was used', () => {
    const log = [user('one'), assistant('reply'), user('two')];
    const first = requestMessages(log.slice(0, 2));
    // A message replaced (an update of a held message is a new object).
    const changed = [log[0]!, assistant('edited', { seq: log[1]!.info.seq }), log[2]!];
    const a = requestMessages(changed, {}, first.state);
    expect(a.messages).toEqual(toRequestMessages(changed).messages);
    expect(a.messages[0]).not.toBe(first.messages[0]);
    // Other options.
    const b = requestMessages(log, { steer: true }, a.state);
    expect(b.messages).toEqual(toRequestMessages(log, { steer: true }).messages);
    // A spent state (a concurrent runner extended it first) is not extended twice.
    const c1 = requestMessages(log, {}, first.state);
    expect(c1.messages).toEqual(toRequestMessages(log).messages);
    expect(first.state.spent).toBe(true);
    // A call id reused by a later step: repaired as a fresh conversion repairs it, problems and all.
    const dup = [user('x'), assistant([p.stepStart(), p.tool('bash', 'o', { callId: 'c9' })])];
    const base = requestMessages(dup);
    const reused = [...dup, assistant([p.stepStart(), p.tool('bash', 'o', { callId: 'c9' })])];
    const other = requestMessages(reused, {}, base.state);
    expect(other.problems.map((x) => x.kind)).toContain('duplicate-call');
    expect({ messages: other.messages, problems: other.problems }).toEqual(toRequestMessages(reused));
    // base was extended (spent): extending it again with another view converts afresh.
    const again = requestMessages([...dup, user('y')], {}, base.state);
    expect(again.problems).toEqual([]);
    expect(again.messages).toEqual(toRequestMessages([...dup, user('y')]).messages);
  });

  it('converts messages with fetched attachments on every call, with that call’s bytes', () => {
    const log = [user([p.text('look'), p.file('image/png', 'https://example.com/a.png')]), assistant('ok')];
    const partId = log[0]!.parts[1]!.id;
    const one = new Map([[partId, new Uint8Array([1, 2, 3])]]);
    const first = requestMessages(log, { fileData: one });
    expect(first.messages).toEqual(toRequestMessages(log, { fileData: one }).messages);
    const two = new Map([[partId, new Uint8Array([4, 5])]]);
    const next = [...log, user('more')];
    const second = requestMessages(next, { fileData: two }, first.state);
    expect(second.messages).toEqual(toRequestMessages(next, { fileData: two }).messages);
    // Without the bytes the file is named, as a fresh conversion names it.
    const third = requestMessages(next, { fileData: new Map() }, second.state);
    expect(third.messages).toEqual(toRequestMessages(next, { fileData: new Map() }).messages);
  });
});
