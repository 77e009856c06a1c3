import type { Queues } from '@loopline/queue';

// BullMQ job states tests wait for. "Nothing more happens" is a state, not a pause: once no job
// is left to run (for the stack, or for one session), nothing can call the model or write the
// log, so a test waits for that with until() and then asserts, instead of sleeping a window.

/** States of jobs still to run; the loop's queues count delayed jobs too (a resume one TTL out). */
function statesOf(queues: Queues, q: ReturnType<Queues['all']>[number]) {
  const loop = q === queues.step || q === queues.compact || q === queues.prune;
  return loop
    ? (['active', 'wait', 'prioritized', 'delayed'] as const)
    : (['active', 'wait', 'prioritized'] as const);
}

/**
 * Jobs still to run: active, waiting or prioritized jobs of every queue, and delayed jobs of the
 * loop's queues (a background compaction is delayed on purpose, for minutes, on its own queue).
 */
export async function busyJobs(queues: Queues): Promise<number> {
  let busy = 0;
  for (const q of queues.all()) {
    // The reconciler's scheduler always holds its next run: never "work still to do".
    if (q === queues.reconcile) continue;
    const c = await q.getJobCounts(...statesOf(queues, q));
    busy += Object.values(c).reduce((a, b) => a + b, 0);
  }
  return busy;
}

/** Ids of the jobs of one session still to run (same states as busyJobs). */
export async function sessionJobs(queues: Queues, sessionId: string): Promise<string[]> {
  const ids: string[] = [];
  for (const q of queues.all()) {
    if (q === queues.reconcile) continue;
    for (const job of await q.getJobs([...statesOf(queues, q)])) {
      if ((job?.data as { sessionId?: string } | undefined)?.sessionId === sessionId)
        ids.push(job!.id ?? '?');
    }
  }
  return ids;
}

/** True when no job of the session is left to run (for until()). */
export const sessionQuiet = async (queues: Queues, sessionId: string): Promise<boolean> =>
  (await sessionJobs(queues, sessionId)).length === 0;
