import { jobIds } from '@loopline/queue';
import { describe, expect, it } from 'vitest';
import { workerJobIds } from '../src/job-ids.ts';
import { sessionOfJobId } from '../src/reconcile.ts';

// The follow-up job ids the worker derives. BullMQ drops an add under the id of a kept finished
// job, so these say which adds must collapse (the same id) and which must never (distinct ids).

const S = 'ses_01hx';

describe('workerJobIds', () => {
  it('a compaction job per enqueuer fence: a superseded runner never uses up the next one', () => {
    expect(workerJobIds.compact(S, 'msg_a', 3)).not.toBe(workerJobIds.compact(S, 'msg_a', 4));
    expect(workerJobIds.compact(S, 'msg_a', 3)).toBe(workerJobIds.compact(S, 'msg_a', 3));
    expect(workerJobIds.compact(S, 'msg_a', 3).startsWith(jobIds.compact(S, 'msg_a'))).toBe(true);
  });

  it('the prune pass before a compaction never shares the idle prune id of the same step', () => {
    const before = workerJobIds.pruneForCompaction(S, 5, 2);
    expect(before).not.toBe(jobIds.prune(S, 5, 'idle'));
    expect(before).not.toBe(workerJobIds.pruneForCompaction(S, 5, 3));
    expect(before).not.toBe(workerJobIds.pruneForCompaction(S, 6, 2));
  });

  it('every run of one compaction collapses onto one follow-up step; prune follow-ups are per fence', () => {
    expect(workerJobIds.afterCompaction(S, 'msg_a')).toBe(workerJobIds.afterCompaction(S, 'msg_a'));
    expect(workerJobIds.afterCompaction(S, 'msg_a')).not.toBe(workerJobIds.afterCompaction(S, 'msg_b'));
    expect(workerJobIds.afterPrune(S, 5, 2)).not.toBe(workerJobIds.afterPrune(S, 5, 3));
    // Neither is the plain step id of that step count.
    expect(workerJobIds.afterPrune(S, 5, 2)).not.toBe(jobIds.step(S, 5));
  });

  it('ids have no ":" (BullMQ refuses it in custom ids) and name their session', () => {
    const ids = [
      workerJobIds.compact(S, 'msg_a', 1),
      workerJobIds.pruneForCompaction(S, 1, 1),
      workerJobIds.afterCompaction(S, 'msg_a'),
      workerJobIds.afterPrune(S, 1, 1),
    ];
    for (const id of ids) {
      expect(id).not.toContain(':');
      expect(sessionOfJobId(id)).toBe(S);
    }
  });
});
