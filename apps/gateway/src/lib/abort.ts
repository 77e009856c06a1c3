import { activeChildSessions, recordAbortRequest } from '@loopline/db';
import { publishAbort, wakeSession } from '@loopline/queue';
import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../plugins/deps.ts';
import type { AbortResponse } from '../schemas/session-control.ts';
import { HttpError, notFound } from './http-error.ts';

// POST /v1/sessions/:id/abort. Durable first, then fast:
//
// 1. Record the abort on the session under its row lock (`abort_requested_seq` = last_seq), and on
//    every running child session below it (subagents started by the task tool), unless idle or
//    error: an idle or failed session answers 200 {aborted: false} and nothing is written.
// 2. Enqueue, per session, an `abort` step job (deterministic id): whichever step job of the
//    session runs next ends the turn from the recorded request — a session that was queued,
//    between steps or waiting stops as surely as a running one. If Redis refuses, 503: the request
//    is recorded, a retry re-adds the jobs.
// 3. Broadcast on the abort channel: the worker process running a step of one of these sessions
//    cancels its BullMQ job, which aborts the model stream and the tool calls at once; that step
//    ends the turn itself (text streamed so far kept), within milliseconds.

/** Records an abort of a session and its running children, enqueues their abort steps, broadcasts. */
export async function abortSession(
  deps: AppDeps,
  log: FastifyBaseLogger,
  tenantId: string,
  sessionId: string,
): Promise<AbortResponse> {
  const first = await recordAbortRequest(deps.db, tenantId, sessionId);
  if (!first) throw notFound('session', sessionId);
  const session = { id: sessionId, status: first.session.status };
  if (!first.recorded) return { aborted: false, sessionIds: [], session };

  const recorded = new Map<string, number>([[sessionId, first.session.lastSeq]]);
  const parents = [sessionId];
  while (parents.length > 0) {
    const parent = parents.shift()!;
    for (const child of await activeChildSessions(deps.db, tenantId, parent)) {
      if (recorded.has(child.id)) continue;
      const request = await recordAbortRequest(deps.db, tenantId, child.id);
      if (!request?.recorded) continue;
      recorded.set(child.id, request.session.lastSeq);
      parents.push(child.id);
    }
  }

  try {
    for (const [id, seq] of recorded) {
      await wakeSession(deps.queues, 'abort', { sessionId: id, abortSeq: seq }, { tenantId });
    }
  } catch (err) {
    log.error({ err, tenantId, sessionId }, 'abort job enqueue failed after the abort was recorded');
    throw new HttpError('unavailable', 'The abort was recorded but the session could not be woken; retry', {
      sessionIds: [...recorded.keys()],
    });
  }
  try {
    await publishAbort(deps.redis, deps.keys, [...recorded.keys()]);
  } catch (err) {
    // The abort jobs end the turns anyway, only later (after the running step's model call).
    log.warn({ err, tenantId, sessionId }, 'abort broadcast failed');
  }
  log.info({ tenantId, sessionId, sessionIds: [...recorded.keys()] }, 'abort requested');
  return { aborted: true, sessionIds: [...recorded.keys()], session };
}
