import { pendingClientCalls } from '@loopline/core';
import { loadHistory, type SessionInfo } from '@loopline/db';
import type { AppDeps } from '../plugins/deps.ts';
import type { PendingToolCall } from '../schemas/session-control.ts';

// The client tool calls a session waits on, as GET /v1/sessions/:id lists them. Only a waiting
// session can have any, so the log is read only then.

/** The client tool calls a waiting session waits on. */
export async function pendingToolCalls(deps: AppDeps, session: SessionInfo): Promise<PendingToolCall[]> {
  if (session.status !== 'waiting') return [];
  const history = await loadHistory(deps.db, session.tenantId, session.id, { fromSeq: session.boundarySeq });
  return pendingClientCalls(history).map((c) => ({
    callId: c.callId,
    tool: c.tool,
    input: c.input,
    createdAt: new Date(c.createdAt).toISOString(),
    ...(c.deadline !== undefined ? { expiresAt: new Date(c.deadline).toISOString() } : {}),
  }));
}
