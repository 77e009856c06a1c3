// How a step tells a user's abort from a lost lease: the cancelled BullMQ job's signal carries
// SESSION_ABORT_REASON (control/abort.ts cancels with it). Here, below every user of the predicate
// (steps, compaction, processors), so none of them imports the abort machinery for it.

/** The reason a cancelled step job's signal carries (a lost lease carries another). */
export const SESSION_ABORT_REASON = 'loopline: session aborted';

/** The step's signal fired because of POST …/abort, not because the lease was lost. */
export function isUserAbort(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason === SESSION_ABORT_REASON;
}
