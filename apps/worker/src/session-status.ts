import type { ErrorData, SessionStatus } from '@loopline/core';
import { getSession, setSessionStatus } from '@loopline/db';
import { jobIds } from '@loopline/queue';
import { notifyParent } from './control/notify.ts';
import type { WorkerDeps } from './deps.ts';
import type { SessionWriter } from './session-writer.ts';

// Session status writes shared by every processor: fenced, with their events after commit.
// `goIdle` also schedules the idle prune pass (CONTEXT.md §6: after the loop exits, prune).

export async function setStatus(writer: SessionWriter, status: SessionStatus): Promise<void> {
  const { tenantId, sessionId } = writer.ctx;
  await writer.write(async (trx, emit) => {
    await setSessionStatus(trx, tenantId, sessionId, status, null, null);
    emit({ type: 'session.status', status });
  });
}

export async function goIdle(deps: WorkerDeps, writer: SessionWriter, stepCount: number): Promise<void> {
  const { tenantId, sessionId } = writer.ctx;
  await writer.write(async (trx, emit) => {
    await setSessionStatus(trx, tenantId, sessionId, 'idle', null, null);
    emit({ type: 'session.status', status: 'idle' });
    emit({ type: 'session.idle' });
  });
  await deps.queues.add('prune', jobIds.prune(sessionId, stepCount, 'idle'), {
    tenantId,
    sessionId,
    purpose: 'idle',
    overflow: false,
    rejected: false,
    stepCount,
  });
}

/** Ends the loop with a typed error on the session (status `error`). */
export async function failSession(writer: SessionWriter, error: ErrorData): Promise<void> {
  const { tenantId, sessionId } = writer.ctx;
  await writer.write(async (trx, emit) => {
    await setSessionStatus(trx, tenantId, sessionId, 'error', error.message, error);
    emit({ type: 'session.status', status: 'error', detail: error.message });
    emit({ type: 'session.error', error });
  });
  // A child session (task tool) that failed: its parent writes the error as the task's result.
  const session = await getSession(writer.deps.db, tenantId, sessionId);
  if (session?.parentSessionId) await notifyParent(writer.deps, session, writer.deps.logger);
}
