import { beforeEach, describe, expect, it } from 'vitest';
import { errorData } from '../src/errors.ts';
import { compactionRange, unansweredRequest } from '../src/session/compaction-range.ts';
import { assistant, compaction, ids, reset, summary, user } from './build.ts';

beforeEach(reset);

describe('compactionRange', () => {
  it('splits the view at the compaction message: frozen before, pending after', () => {
    const log = [
      user('one', { id: 'u1' }),
      assistant('a', { id: 'a2' }),
      compaction({}, { id: 'c3' }),
      user('typed during the compaction', { id: 'u4', midRun: true }),
    ];
    const range = compactionRange(log, 'c3')!;
    expect(range.marker.info.id).toBe('c3');
    expect(range.part.type).toBe('compaction');
    expect(ids(range.frozen)).toEqual(['u1', 'a2']);
    expect(ids(range.pending)).toEqual(['u4']);
  });

  it('starts the frozen range at the previous boundary and leaves unfinished summaries out', () => {
    const log = [
      user('old', { id: 'u1' }),
      assistant('old reply', { id: 'a2' }),
      compaction({ tailStartId: 'u1' }, { id: 'c3' }),
      summary('S1', 'c3', { id: 's4' }),
      user('new', { id: 'u5' }),
      compaction({}, { id: 'c6' }),
      // This compaction's own summary, still streaming: neither frozen nor pending.
      summary('partial', 'c6', { id: 's7', finish: undefined }),
      // A failed earlier attempt of another compaction: never input.
      summary('failed', 'c3', { id: 's8', error: errorData('AbortedError') }),
    ];
    const range = compactionRange([...log].reverse(), 'c6')!;
    expect(ids(range.frozen)).toEqual(['c3', 's4', 'u1', 'a2', 'u5']);
    expect(range.pending).toEqual([]);
  });

  it('is undefined for an unknown, reverted or non-compaction message', () => {
    const log = [user('hi', { id: 'u1' }), compaction({}, { id: 'c2', reverted: true })];
    expect(compactionRange(log, 'nope')).toBeUndefined();
    expect(compactionRange(log, 'c2')).toBeUndefined();
    expect(compactionRange(log, 'u1')).toBeUndefined();
  });
});

describe('unansweredRequest', () => {
  it('finds the user request that only failed calls followed', () => {
    const req = user('a huge paste', { id: 'u2' });
    const failed = assistant('', { id: 'a3', finish: undefined, error: errorData('ContextOverflowError') });
    expect(unansweredRequest([user('x'), assistant('y'), req, failed])).toBe(req);
    expect(unansweredRequest([req])).toBe(req);
  });

  it('is undefined once the request was answered, or when the newest user message is synthetic', () => {
    expect(unansweredRequest([user('q'), assistant('answer')])).toBeUndefined();
    expect(unansweredRequest([user('q'), user('Continue', { synthetic: true })])).toBeUndefined();
    expect(unansweredRequest([compaction()])).toBeUndefined();
    expect(unansweredRequest([])).toBeUndefined();
  });
});
