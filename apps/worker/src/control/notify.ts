import type { SessionInfo } from '@loopline/db';
import { wakeSession } from '@loopline/queue';
import type { Logger } from 'pino';
import type { Jobs } from '../deps.ts';

// Child → parent: when a child session (started by the task tool) stops — its loop exited, failed
// or was aborted — its runner enqueues a step of the parent, which, under the parent's lease,
// writes the child's answer into the task call and continues the parent's loop (waits.ts).
//
// The job id is derived from the child's state (its step count when it stopped), so the child's
// retried or repeated exits collapse onto one job. The notification is only a wake-up: the
// parent re-reads the child from PostgreSQL, and also checks its children on every step it runs,
// so a notification lost in a crash is healed by the parent's next wake.

/** Enqueues the parent's `child-done` step when a child session stops. */
export async function notifyParent(
  deps: Jobs,
  child: Pick<SessionInfo, 'id' | 'tenantId' | 'parentSessionId' | 'stepCount'>,
  log: Logger,
): Promise<void> {
  const parentId = child.parentSessionId;
  if (!parentId) return;
  try {
    await wakeSession(
      deps.queues,
      'child-done',
      { sessionId: parentId, childId: child.id, childStepCount: child.stepCount },
      { tenantId: child.tenantId },
    );
  } catch (err) {
    // Healed when the parent next wakes; logged so an operator can tell why it waits.
    log.warn({ err, parentSessionId: parentId }, 'could not notify the parent session');
  }
}
