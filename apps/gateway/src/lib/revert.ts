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

// Revert (docs/context.md §7) in one transaction under the session row lock, so appends, status
// changes and fenced writes wait and the status read here holds at commit. Refused (409) unless
// idle or error, 404 for a message not in this session, 409 for one an earlier revert hid. Marks
// every row from planRevert's `fromSeq` reverted, stores the new boundary, drops a lastUsage of a
// hidden message, turns `error` into `idle`, and takes a new fence so a job begun before the
// revert (idle prune, background compaction) fails with StaleFenceError instead of writing on
// hidden history. After commit: `session.reverted` (and `session.status` when it changed).

/** Statuses in which a revert is allowed: nothing runs, nothing is queued. */
export const REVERTIBLE_STATUSES: readonly SessionStatus[] = ['idle', 'error'];

export interface RevertResult {
  reverted: number;
  fromSeq: number;
  boundarySeq: number | null;
  session: SessionInfo;
}

/** Reverts a session to before a message (the steps in the file header). */
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

    // The plan reads the messages and their compaction parts only: the whole log's text and tool
    // outputs (a long session's hundreds of MB) would be loaded into the gateway for nothing.
    const log = await loadHistory(trx, tenantId, sessionId, { partTypes: ['compaction'] });
    const plan = planRevert(log, target.info.seq);
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
