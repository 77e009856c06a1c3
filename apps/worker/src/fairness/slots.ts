import { releaseSlot } from '@loopline/queue';
import type { Bus, Jobs } from '../deps.ts';
import { heldSlotsOf } from './held-slots.ts';

// Releasing a session's tenant slot, and waking the step that waits longest for one (the release
// pops it from the tenant's waiters, interactive first): its delayed job is promoted, so a freed
// slot is used at once instead of at the waiter's next retry. A popped waiter whose job is not
// delayed (running, or already gone) is skipped; it retries on its own timer.

const MAX_WAKE_TRIES = 3;

/** Releases the session's tenant slot and promotes the longest waiter's delayed step. */
export async function releaseTenantSlot(
  deps: Bus & Jobs,
  tenantId: string,
  sessionId: string,
): Promise<void> {
  // Forgotten first: even when the release fails, the next step asks Redis for its slot.
  heldSlotsOf(deps.redis).forget(sessionId);
  let { waiters } = await releaseSlot(deps.redis, deps.keys, tenantId, sessionId, 1);
  for (let tries = 0; tries < MAX_WAKE_TRIES && waiters.length > 0; tries++) {
    if (await promoteDelayed(deps, 'step', waiters[0]!)) return;
    // Not delayed: pop the next one (releasing nothing: the session holds no slot any more).
    ({ waiters } = await releaseSlot(deps.redis, deps.keys, tenantId, sessionId, 1));
  }
}

/** Moves a delayed job to the wait list now; false when it is not delayed (or is gone). */
export async function promoteDelayed(
  deps: Jobs,
  kind: 'step' | 'batchItem',
  jobId: string,
): Promise<boolean> {
  const job = await deps.queues[kind].getJob(jobId);
  if (!job) return false;
  try {
    await job.promote();
    return true;
  } catch {
    return false; // not delayed any more (it is running, or finished)
  }
}
