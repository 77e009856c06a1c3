import { jobIds, WAKE } from '@loopline/queue';
import { describe, expect, it } from 'vitest';
import { sessionOfJobId } from '../src/reconcile.ts';

// The follow-up job ids the worker adds (compaction and prune jobs from jobIds, follow-up steps
// from the wake catalogue). BullMQ drops an add under the id of a kept finished job, so these say
// which adds must collapse (the same id) and which must never (distinct ids).

const S = 'ses_01hx';

describe('worker follow-up job ids', () => {
  it('a compaction job per enqueuer fence: a superseded runner never uses up the next one', () => {
    expect(jobIds.compact(S, 'msg_a', 3)).not.toBe(jobIds.compact(S, 'msg_a', 4));
    expect(jobIds.compact(S, 'msg_a', 3)).toBe(jobIds.compact(S, 'msg_a', 3));
    expect(jobIds.compact(S, 'msg_a', 3)).toBe(`compact-${S}-msg_a-f3`);
  });

  it('the prune pass before a compaction never shares the idle prune id of the same step', () => {
    const before = jobIds.pruneForCompaction(S, 5, 2);
    expect(before).not.toBe(jobIds.prune(S, 5, 'idle'));
    expect(before).not.toBe(jobIds.pruneForCompaction(S, 5, 3));
    expect(before).not.toBe(jobIds.pruneForCompaction(S, 6, 2));
  });

  it('every run of one compaction collapses onto one follow-up step; prune follow-ups are per fence', () => {
    const compacted = (m: string) => WAKE.compacted.jobId({ sessionId: S, compactionMessageId: m });
    const pruned = (stepCount: number, fence: number) =>
      WAKE.pruned.jobId({ sessionId: S, stepCount, fence });
    expect(compacted('msg_a')).toBe(compacted('msg_a'));
    expect(compacted('msg_a')).not.toBe(compacted('msg_b'));
    expect(pruned(5, 2)).not.toBe(pruned(5, 3));
    // Neither is the plain step id of that step count.
    expect(pruned(5, 2)).not.toBe(WAKE.continue.jobId({ sessionId: S, stepCount: 5 }));
  });

  it('ids have no ":" (BullMQ refuses it in custom ids) and the reconciler finds their session', () => {
    const ids = [
      jobIds.compact(S, 'msg_a', 1),
      jobIds.pruneForCompaction(S, 1, 1),
      WAKE.compacted.jobId({ sessionId: S, compactionMessageId: 'msg_a' }),
      WAKE.pruned.jobId({ sessionId: S, stepCount: 1, fence: 1 }),
      WAKE.continue.jobId({ sessionId: S, stepCount: 1 }),
      WAKE.message.jobId({ sessionId: S, messageId: 'msg_a' }),
      WAKE['message-replay'].jobId({ sessionId: S, messageId: 'msg_a', fence: 2 }),
      WAKE.abort.jobId({ sessionId: S, abortSeq: 3 }),
      WAKE['tool-results'].jobId({ sessionId: S, fence: 2 }),
      WAKE['tool-timeout'].jobId({ sessionId: S, callId: 'call:1' }),
      WAKE['child-done'].jobId({ sessionId: S, childId: 'ses_02ch', childStepCount: 1 }),
      WAKE.resume.jobId({ sessionId: S, at: 1 }),
      WAKE.reconcile.jobId({ sessionId: S, fence: 1 }),
    ];
    for (const id of ids) {
      expect(id).not.toContain(':');
      expect(sessionOfJobId(id)).toBe(S);
    }
  });
});
