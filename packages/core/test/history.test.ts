import { beforeEach, describe, expect, it } from 'vitest';
import { filterCompacted, findBoundarySeq } from '../src/session/history.ts';
import { assistant, compaction, ids, reset, summary, user } from './build.ts';

beforeEach(reset);

describe('filterCompacted', () => {
  it('returns everything when there is no boundary', () => {
    const log = [user('hi', { id: 'u1' }), assistant('hello', { id: 'a1' })];
    expect(ids(filterCompacted(log))).toEqual(['u1', 'a1']);
  });

  it('orders compaction message, summary, kept tail, then everything after', () => {
    const log = [
      user('one', { id: 'u1' }),
      assistant('r1', { id: 'a1' }),
      user('two', { id: 'u2' }),
      assistant('r2', { id: 'a2' }),
      compaction({ tailStartId: 'u2' }, { id: 'c1' }),
      summary('S1', 'c1', { id: 's1' }),
      user('three', { id: 'u3' }),
      assistant('r3', { id: 'a3' }),
    ];
    expect(ids(filterCompacted(log))).toEqual(['c1', 's1', 'u2', 'a2', 'u3', 'a3']);
  });

  it('cuts everything before the compaction message when no tail was kept', () => {
    const log = [
      user('one', { id: 'u1' }),
      assistant('r1', { id: 'a1' }),
      compaction({}, { id: 'c1' }),
      summary('S1', 'c1', { id: 's1' }),
      user('two', { id: 'u2' }),
    ];
    expect(ids(filterCompacted(log))).toEqual(['c1', 's1', 'u2']);
  });

  it('cuts at the newest of two successive compactions', () => {
    const log = [
      user('one', { id: 'u1' }),
      compaction({}, { id: 'c1' }),
      summary('S1', 'c1', { id: 's1' }),
      user('two', { id: 'u2' }),
      assistant('r2', { id: 'a2' }),
      compaction({}, { id: 'c2' }),
      summary('S2', 'c2', { id: 's2' }),
      user('three', { id: 'u3' }),
    ];
    expect(ids(filterCompacted(log))).toEqual(['c2', 's2', 'u3']);
  });

  it('drops an older boundary found inside the newest kept tail', () => {
    const log = [
      user('one', { id: 'u1' }),
      assistant('r1', { id: 'a1' }),
      compaction({ tailStartId: 'u1' }, { id: 'c1' }),
      summary('S1', 'c1', { id: 's1' }),
      user('two', { id: 'u2' }),
      assistant('r2', { id: 'a2' }),
      compaction({ tailStartId: 'a1' }, { id: 'c2' }),
      summary('S2', 'c2', { id: 's2' }),
    ];
    expect(ids(filterCompacted(log))).toEqual(['c2', 's2', 'a1', 'u2', 'a2']);
  });

  it('does not treat a failed summary as a boundary, and hides it', () => {
    const log = [
      user('one', { id: 'u1' }),
      compaction({}, { id: 'c1' }),
      summary('partial', 'c1', { id: 's1', error: { name: 'APIError', message: 'boom' }, finish: 'error' }),
      user('two', { id: 'u2' }),
    ];
    expect(ids(filterCompacted(log))).toEqual(['u1', 'c1', 'u2']);
  });

  it('does not treat an unfinished summary as a boundary', () => {
    const log = [
      user('one', { id: 'u1' }),
      compaction({}, { id: 'c1' }),
      summary('streaming…', 'c1', { id: 's1', finish: undefined }),
    ];
    expect(ids(filterCompacted(log))).toEqual(['u1', 'c1']);
  });

  it('falls back to the previous boundary when the newest summary failed', () => {
    const log = [
      user('one', { id: 'u1' }),
      compaction({}, { id: 'c1' }),
      summary('S1', 'c1', { id: 's1' }),
      user('two', { id: 'u2' }),
      compaction({}, { id: 'c2' }),
      summary('bad', 'c2', { id: 's2', error: { name: 'AbortedError', message: 'stop' } }),
    ];
    expect(ids(filterCompacted(log))).toEqual(['c1', 's1', 'u2', 'c2']);
  });

  it('needs the compaction part: a summary answering a plain user message is no boundary', () => {
    const log = [user('one', { id: 'u1' }), summary('S', 'u1', { id: 's1' }), user('two', { id: 'u2' })];
    expect(ids(filterCompacted(log))).toEqual(['u1', 's1', 'u2']);
  });

  it('keeps a message that arrived during the compaction job after the tail', () => {
    const log = [
      user('one', { id: 'u1' }),
      assistant('r1', { id: 'a1' }),
      compaction({ tailStartId: 'a1' }, { id: 'c1' }),
      user('while compacting', { id: 'u2' }),
      summary('S1', 'c1', { id: 's1' }),
    ];
    expect(ids(filterCompacted(log))).toEqual(['c1', 's1', 'a1', 'u2']);
  });

  it('excludes reverted messages, and a reverted compaction is no boundary', () => {
    const log = [
      user('one', { id: 'u1' }),
      compaction({}, { id: 'c1', reverted: true }),
      summary('S1', 'c1', { id: 's1', reverted: true }),
      user('two', { id: 'u2', reverted: true }),
    ];
    expect(ids(filterCompacted(log))).toEqual(['u1']);
  });

  it('ignores a tailStartId that is not loaded', () => {
    const log = [compaction({ tailStartId: 'gone' }, { id: 'c1' }), summary('S1', 'c1', { id: 's1' })];
    expect(ids(filterCompacted(log))).toEqual(['c1', 's1']);
  });

  it('sorts rows by seq when given out of order', () => {
    const u1 = user('one', { id: 'u1' });
    const a1 = assistant('r1', { id: 'a1' });
    expect(ids(filterCompacted([a1, u1]))).toEqual(['u1', 'a1']);
  });
});

describe('findBoundarySeq', () => {
  it('is undefined without a completed boundary', () => {
    expect(findBoundarySeq([user('hi'), compaction()])).toBeUndefined();
  });

  it('is the seq of the tail start when a tail was kept', () => {
    const log = [
      user('one', { id: 'u1' }),
      assistant('r1', { id: 'a1' }),
      user('two', { id: 'u2' }),
      compaction({ tailStartId: 'u2' }, { id: 'c1' }),
      summary('S1', 'c1', { id: 's1' }),
    ];
    expect(findBoundarySeq(log)).toBe(3);
  });

  it('is the seq of the compaction message without a tail', () => {
    const log = [user('one'), compaction({}, { id: 'c1' }), summary('S1', 'c1')];
    expect(findBoundarySeq(log)).toBe(2);
  });

  it('loading seq >= boundary then filtering equals filtering everything', () => {
    const log = [
      user('one', { id: 'u1' }),
      assistant('r1', { id: 'a1' }),
      compaction({ tailStartId: 'u1' }, { id: 'c1' }),
      summary('S1', 'c1', { id: 's1' }),
      user('two', { id: 'u2' }),
      assistant('r2', { id: 'a2' }),
      compaction({ tailStartId: 'a1' }, { id: 'c2' }),
      summary('S2', 'c2', { id: 's2' }),
      user('three', { id: 'u3' }),
      compaction({}, { id: 'c3' }),
      summary('bad', 'c3', { id: 's3', error: { name: 'APIError', message: 'x' } }),
    ];
    const b = findBoundarySeq(log)!;
    expect(b).toBe(2);
    expect(filterCompacted(log.filter((m) => m.info.seq >= b))).toEqual(filterCompacted(log));
  });
});
