import type { SessionEvent } from '@loopline/core';
import { jobIds } from '@loopline/queue';
import type { WorkerDeps } from '../deps.ts';
import { promoteDelayed, releaseTenantSlot } from './slots.ts';

// After a runner commits a status that ends the session's run (idle, error, waiting for client
// tool results), whatever the path that wrote it (exit, failure, abort, a cancelled batch…):
// - the session's tenant slot is released and the longest waiter woken;
// - the batch item that posted the session's messages, if any, is woken (its job is delayed while
//   the session runs) to post the next message or record the result.
// Both are best effort: a slot not released expires with its lease, an item not woken looks again
// after its poll interval.

const STOPPED = new Set(['idle', 'error', 'waiting']);

export function stopsTheRun(events: readonly SessionEvent[]): boolean {
  return events.some((e) => e.type === 'session.status' && STOPPED.has(e.status));
}

export async function afterRunStopped(
  deps: WorkerDeps,
  ctx: { tenantId: string; sessionId: string },
  events: readonly SessionEvent[],
): Promise<void> {
  if (!stopsTheRun(events)) return;
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
