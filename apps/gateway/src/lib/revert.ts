import { planRevert, type SessionEvent, type SessionStatus } from '@loopline/core';
import {
  acquireFence,
  getMessage,
  loadHistory,
  lockSession,
  markReverted,
  type SessionInfo,
  type SessionProgress,
  setSessionStatus,
  updateSessionProgress,
} from '@loopline/db';
import { publishEvents } from '@loopline/queue';
import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../plugins/deps.ts';
import { HttpError, notFound } from './http-error.ts';

// Revert (docs/context.md §7) in one transaction under the session row lock:
//
// 1. Lock the session row (lockSession). Appends, status changes and the worker's fenced writes
//    wait for it, so the status read here still holds at commit: a message posted meanwhile is
//    appended after the revert, never before it.
// 2. Refuse with 409 session_busy unless the session is idle or error; 404 for a message that is
//    not in this session (another tenant's or session's id is unknown here); 409 conflict for a
//    message an earlier revert already hid.
// 3. Plan over the whole non-reverted log (core's planRevert: the revert point, widened so no
//    compaction point is split) and mark every row from `fromSeq` on `reverted` (rows are kept).
// 4. Store the new boundary pointer (findBoundarySeq of what stays: compactions after the revert
//    point stop being boundaries), drop a lastUsage that belongs to a hidden message, and turn an
//    `error` status into `idle` (the log no longer ends in that failure).
// 5. Take a new fencing token: a job that began before the revert (an idle prune, a background
//    compaction) fails its next write with StaleFenceError instead of writing on hidden history.
//
// After commit: one `session.reverted` event (and `session.status` when the status changed).
// New input after a revert appends after it; the reverted rows stay reverted.

/** Statuses in which a revert is allowed: nothing runs, nothing is queued. */
export const REVERTIBLE_STATUSES: readonly SessionStatus[] = ['idle', 'error'];

export interface RevertResult {
  reverted: number;
  fromSeq: number;
  boundarySeq: number | null;
  session: SessionInfo;
}

export async function revertSession(
  deps: AppDeps,
  log: FastifyBaseLogger,
  tenantId: string,
  sessionId: string,
  messageId: string,
): Promise<RevertResult> {
  const { result, statusChanged } = await deps.db.transaction().execute(async (trx) => {
    const session = await lockSession(trx, tenantId, sessionId);
    if (!session) throw notFound('session', sessionId);
    const target = await getMessage(trx, tenantId, sessionId, messageId);
    if (!target) throw notFound('message', messageId);
    if (!REVERTIBLE_STATUSES.includes(session.status))
      throw new HttpError(
        'session_busy',
        `The session is ${session.status}: it can be reverted once it is idle`,
        { status: session.status },
      );
    // A hidden row is no revert point: reverting to it would hide the live history written
    // after the earlier revert (t1 t2 t3, revert to t2, t4, "revert to t3" would drop t4).
    if (target.info.reverted)
      throw new HttpError('conflict', 'The message is already reverted: pick a message of the live history', {
        messageId,
      });

    const plan = planRevert(await loadHistory(trx, tenantId, sessionId), target.info.seq);
    const reverted = await markReverted(trx, tenantId, sessionId, plan.fromSeq);
    await acquireFence(trx, tenantId, sessionId);
    const patch: SessionProgress = { boundarySeq: plan.boundarySeq };
    if (session.lastUsage && session.lastUsage.messageSeq >= plan.fromSeq) patch.lastUsage = null;
    await updateSessionProgress(trx, tenantId, sessionId, patch);
    const statusChanged = session.status === 'error';
    if (statusChanged) await setSessionStatus(trx, tenantId, sessionId, 'idle', null, null);
    const after = await lockSession(trx, tenantId, sessionId);
    return {
      result: { reverted, fromSeq: plan.fromSeq, boundarySeq: plan.boundarySeq, session: after! },
      statusChanged,
    };
  });

  const events: SessionEvent[] = [
    {
      type: 'session.reverted',
      messageId,
      fromSeq: result.fromSeq,
      reverted: result.reverted,
      boundarySeq: result.boundarySeq,
    },
  ];
  if (statusChanged) events.push({ type: 'session.status', status: 'idle' });
  try {
    await publishEvents(deps.redis, deps.keys, sessionId, events);
  } catch (err) {
    log.warn({ err, tenantId, sessionId }, 'event publish failed');
  }
  log.info(
    { tenantId, sessionId, messageId, fromSeq: result.fromSeq, reverted: result.reverted },
    'session reverted',
  );
  return result;
}
