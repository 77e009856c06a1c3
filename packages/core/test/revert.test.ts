import { beforeEach, describe, expect, it } from 'vitest';
import { filterCompacted } from '../src/session/history.ts';
import { planRevert } from '../src/session/revert.ts';
import { assistant, compaction, ids, reset, summary, user } from './build.ts';

beforeEach(reset);

// seq:  1 u1 · 2 a2 · 3 c3 (compaction) · 4 s4 (its summary) · 5 u5 · 6 a6 · 7 u7 · 8 a8
function log() {
  reset();
  return [
    user('one', { id: 'u1' }),
    assistant('r1', { id: 'a2' }),
    compaction({}, { id: 'c3' }),
    summary('S', 'c3', { id: 's4' }),
    user('two', { id: 'u5' }),
    assistant('r2', { id: 'a6' }),
    user('three', { id: 'u7' }),
    assistant('r3', { id: 'a8' }),
  ];
}

/** The log after applying a plan (rows kept, marked), as the database would hold it. */
function applied(messages: ReturnType<typeof log>, fromSeq: number) {
  return messages.map((m) => (m.info.seq >= fromSeq ? { ...m, info: { ...m.info, reverted: true } } : m));
}

describe('planRevert', () => {
  it('hides the message and everything after it; a boundary before it stays', () => {
    expect(planRevert(log(), 7)).toEqual({ fromSeq: 7, hidden: ['u7', 'a8'], boundarySeq: 3 });
  });

  it('takes a compaction point after the revert point out of the boundaries', () => {
    const plan = planRevert(log(), 2);
    expect(plan).toEqual({
      fromSeq: 2,
      hidden: ['a2', 'c3', 's4', 'u5', 'a6', 'u7', 'a8'],
      boundarySeq: null,
    });
    expect(ids(filterCompacted(applied(log(), plan.fromSeq)))).toEqual(['u1']);
  });

  it('reverts a compaction point whole when asked to revert its summary', () => {
    expect(planRevert(log(), 4)).toMatchObject({ fromSeq: 3, boundarySeq: null });
    expect(planRevert(log(), 3)).toMatchObject({ fromSeq: 3, boundarySeq: null });
  });

  it('reverts a compaction point whole when the target arrived while it ran', () => {
    const messages = [
      user('one', { id: 'u1' }),
      compaction({}, { id: 'c2' }),
      user('during', { id: 'u3' }),
      summary('S', 'c2', { id: 's4' }),
      assistant('r', { id: 'a5' }),
    ];
    expect(planRevert(messages, 3)).toEqual({
      fromSeq: 2,
      hidden: ['c2', 'u3', 's4', 'a5'],
      boundarySeq: null,
    });
  });

  it('follows compaction points that reach further back', () => {
    // c2's summary (s5) answers after c3 was written: hiding s6 pulls in c3, which pulls in s5 → c2.
    const messages = [
      user('one', { id: 'u1' }),
      compaction({}, { id: 'c2' }),
      compaction({}, { id: 'c3' }),
      user('x', { id: 'u4' }),
      summary('S2', 'c2', { id: 's5' }),
      summary('S3', 'c3', { id: 's6' }),
    ];
    expect(planRevert(messages, 6).fromSeq).toBe(2);
  });

  it('keeps the newest boundary before the revert point, with its tail, across several', () => {
    const messages = [
      user('one', { id: 'u1' }),
      assistant('r1', { id: 'a2' }),
      compaction({}, { id: 'c3' }),
      summary('S1', 'c3', { id: 's4' }),
      user('two', { id: 'u5' }),
      assistant('r2', { id: 'a6' }),
      compaction({ tailStartId: 'u5' }, { id: 'c7' }),
      summary('S2', 'c7', { id: 's8' }),
      user('three', { id: 'u9' }),
    ];
    expect(planRevert(messages, 9).boundarySeq).toBe(5);
    expect(planRevert(messages, 6).boundarySeq).toBe(3);
    expect(planRevert(messages, 1).boundarySeq).toBeNull();
  });

  it('ignores rows already reverted, and reverting to a hidden message hides only newer ones', () => {
    const first = planRevert(log(), 5);
    const messages = [
      ...applied(log(), first.fromSeq),
      user('after', { id: 'u9' }),
      assistant('r', { id: 'a10' }),
    ];
    expect(planRevert(messages, 6)).toEqual({ fromSeq: 6, hidden: ['u9', 'a10'], boundarySeq: 3 });
    expect(planRevert(applied(log(), 5), 5)).toEqual({ fromSeq: 5, hidden: [], boundarySeq: 3 });
  });

  it('accepts the log in any order', () => {
    expect(planRevert([...log()].reverse(), 7)).toEqual({ fromSeq: 7, hidden: ['u7', 'a8'], boundarySeq: 3 });
  });
});
