import { jobIds } from '@loopline/queue';

// Job ids the worker derives for follow-up jobs, on top of the catalog's (queue/producer.ts).
// BullMQ keeps finished jobs for a day, and adding a job under the id of a finished one is a
// no-op: an id that a legitimate later job could reuse would silently drop that job. So ids
// that a superseded runner might have "used up" carry the enqueuer's fence, and ids that must
// collapse (a retried compaction's follow-up step) carry the compaction message id.

export const workerJobIds = {
  /** A compaction job per enqueuer: one that ended without a summary never blocks the next. */
  compact: (sessionId: string, messageId: string, fence: number) =>
    `${jobIds.compact(sessionId, messageId)}-f${fence}`,
  /** The prune pass before a compaction, per step runner. */
  pruneForCompaction: (sessionId: string, stepCount: number, fence: number) =>
    jobIds.prune(sessionId, stepCount, `compact-f${fence}`),
  /** The step after a compaction point: every run of that compaction collapses onto one step. */
  afterCompaction: (sessionId: string, messageId: string) => `step-${sessionId}-after-${messageId}`,
  /** The step after a prune pass that made the compaction unnecessary. */
  afterPrune: (sessionId: string, stepCount: number, fence: number) =>
    `step-${sessionId}-${stepCount}-pruned-f${fence}`,
};
