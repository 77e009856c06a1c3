import { deferredCalls, ingestCap, type LateResult, type SessionEvent, type ToolPart } from '@loopline/core';
import { acquireFence, loadHistory, lockSession, setSessionStatus, writeLateToolResult } from '@loopline/db';
import { limitsFor } from '@loopline/llm';
import { publishEvents, wakeSession } from '@loopline/queue';
import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../plugins/deps.ts';
import type { ToolResultsBody } from '../schemas/session-control.ts';
import { HttpError, notFound } from './http-error.ts';

// POST /v1/sessions/:id/tool-results: results of client tool calls, in one transaction under the
// session row lock (as revert does), with every check before the first write:
//
// 1. 409 session_not_waiting unless the session is waiting; then 404 for a call id that is no
//    tool call of this session (another tenant's or session's id is just as unknown), 409
//    tool_call_answered for a call that already has a result (answered, timed out, aborted).
// 2. Each call is closed (completed, truncated at ingest like a webhook's, or error) by db
//    writeLateToolResult, the worker's one write of a late result too; a new fence is taken, so
//    the step that just set `waiting` can no longer write, and the session is queued again.
// 3. After commit: a step job (reason tool-results, one per fence) continues the loop; then the
//    events. If Redis refuses the job, 503: the results are stored, and the next wake (a message,
//    the call's timeout job) continues.

export interface ToolResultsOutcome {
  parts: ToolPart[];
  session: { id: string; status: 'queued' };
}

/** Writes client tool results and wakes the session (the steps in the file header). */
export async function submitToolResults(
  deps: AppDeps,
  log: FastifyBaseLogger,
  tenantId: string,
  sessionId: string,
  results: ToolResultsBody['results'],
): Promise<ToolResultsOutcome> {
  const { parts, fence } = await deps.db.transaction().execute(async (trx) => {
    const session = await lockSession(trx, tenantId, sessionId);
    if (!session) throw notFound('session', sessionId);
    if (session.status !== 'waiting')
      throw new HttpError(
        'session_not_waiting',
        `The session is ${session.status}, not waiting for tool results`,
        {
          status: session.status,
        },
      );
    const history = await loadHistory(trx, tenantId, sessionId, { fromSeq: session.boundarySeq });
    const calls = new Map<string, ToolPart>();
    for (const m of history) for (const p of m.parts) if (p.type === 'tool') calls.set(p.callId, p);
    const unknown = results.filter((r) => !calls.has(r.callId)).map((r) => r.callId);
    if (unknown.length > 0)
      throw new HttpError('not_found', `No tool call with id ${unknown.join(', ')} in this session`, {
        callIds: unknown,
      });
    const pending = new Set(
      deferredCalls(history)
        .filter((c) => c.awaiting === 'client')
        .map((c) => c.callId),
    );
    const answered = results.filter((r) => !pending.has(r.callId)).map((r) => r.callId);
    if (answered.length > 0)
      throw new HttpError(
        'tool_call_answered',
        `Tool call ${answered.join(', ')} is not waiting for a result`,
        {
          callIds: answered,
        },
      );

    const now = Date.now();
    const toolOutput = session.agent.toolOutput;
    const maxTokens = ingestCap({
      ...session.agent,
      limits: limitsFor(session.agent.model, session.agent.limits),
    });
    const written: ToolPart[] = [];
    for (const r of results) {
      const result: LateResult = r.error !== undefined ? { error: r.error } : { output: r.output ?? '' };
      written.push(
        await writeLateToolResult(trx, {
          tenantId,
          sessionId,
          call: calls.get(r.callId)!,
          result,
          now,
          toolOutput,
          tokenizer: deps.tokenizer,
          maxTokens,
        }),
      );
    }
    const fence = await acquireFence(trx, tenantId, sessionId);
    await setSessionStatus(trx, tenantId, sessionId, 'queued', null, null);
    return { parts: written, fence };
  });

  try {
    await wakeSession(deps.queues, 'tool-results', { sessionId, fence }, { tenantId });
  } catch (err) {
    log.error({ err, tenantId, sessionId }, 'step enqueue failed after tool results were stored');
    throw new HttpError('unavailable', 'The results were stored but the session could not be woken', {
      callIds: parts.map((p) => p.callId),
    });
  }
  const events: SessionEvent[] = [
    ...parts.map((part): SessionEvent => ({ type: 'part.updated', part })),
    { type: 'session.status', status: 'queued' },
  ];
  try {
    await publishEvents(deps.redis, deps.keys, sessionId, events);
  } catch (err) {
    log.warn({ err, tenantId, sessionId }, 'event publish failed');
  }
  log.info({ tenantId, sessionId, callIds: parts.map((p) => p.callId) }, 'client tool results written');
  return { parts, session: { id: sessionId, status: 'queued' } };
}
