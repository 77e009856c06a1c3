import { jobIds } from '@loopline/queue';
import type { Bus, Jobs, Log } from '../deps.ts';
import { promoteDelayed, releaseTenantSlot } from './slots.ts';

// What follows a run's end, named where the run ends: every write of a status that stops the run
// (idle: session-status goIdle, control/abort endAbortedTurn, admission's cancelled batch item, a
// compaction committed or recorded as a no-op with nothing to resume; error: failSession;
// waiting: control/waits enterWait) calls runStopped after its commit:
// - the session's tenant slot is released and the longest waiter woken;
// - the batch item that posted the session's messages, if any, is woken (its job is delayed while
//   the session runs) to post the next message or record the result.
// Both are best effort: a slot not released expires with its lease, an item not woken looks again
// after its poll interval.

/** What follows a run's end: the tenant slot released and a waiting batch item woken. */
export async function runStopped(
  deps: Bus & Jobs & Log,
  ctx: { tenantId: string; sessionId: string },
): Promise<void> {
  const { tenantId, sessionId } = ctx;
  try {
    await releaseTenantSlot(deps, tenantId, sessionId);
  } catch (err) {
    deps.logger.warn({ err, tenantId, sessionId }, 'tenant slot not released (it expires)');
  }
  try {
    await promoteDelayed(deps, 'batchItem', jobIds.batchItem(sessionId));
  } catch (err) {
    deps.logger.warn({ err, tenantId, sessionId }, 'batch item not woken (it polls)');
  }
}
