import {
  type AssistantMessage,
  type ErrorData,
  isTurnError,
  newId,
  type SessionStatus,
} from '@loopline/core';
import {
  createAssistantMessage,
  getSession,
  newestMessageInfo,
  setSessionStatus,
  type Trx,
  updateMessageInfo,
} from '@loopline/db';
import { jobIds } from '@loopline/queue';
import { notifyParent } from './control/notify.ts';
import type { Bus, Jobs, Log } from './deps.ts';
import { runStopped } from './fairness/loop-stopped.ts';
import type { SessionWriter } from './session-writer.ts';

// Session status writes shared by every processor: fenced, with their events after commit.
// `goIdle` and `failSession` end the run: after the commit they free the tenant slot and wake the
// batch item (runStopped); `goIdle` also schedules the idle prune pass (docs/context.md §6).

/** A status the run goes on in; the statuses that end it have their own writes (below, waits.ts). */
type RunningStatus = Exclude<SessionStatus, 'idle' | 'error' | 'waiting'>;

/** Writes a running status and its event. */
export async function setStatus(writer: SessionWriter, status: RunningStatus): Promise<void> {
  const { tenantId, sessionId } = writer.ctx;
  await writer.write(async (trx, emit) => {
    await setSessionStatus(trx, tenantId, sessionId, status, null, null);
    emit({ type: 'session.status', status });
  });
}

/** Ends the run idle: status and events, then runStopped and the idle prune job. */
export async function goIdle(
  deps: Bus & Jobs & Log,
  writer: SessionWriter,
  stepCount: number,
): Promise<void> {
  const { tenantId, sessionId } = writer.ctx;
  await writer.write(async (trx, emit) => {
    await setSessionStatus(trx, tenantId, sessionId, 'idle', null, null);
    emit({ type: 'session.status', status: 'idle' });
    emit({ type: 'session.idle' });
  });
  await runStopped(deps, writer.ctx);
  await deps.queues.add('prune', jobIds.prune(sessionId, stepCount, 'idle'), {
    tenantId,
    sessionId,
    purpose: 'idle',
    overflow: false,
    rejected: false,
    stepCount,
  });
}

/**
 * Ends the loop with a typed error: the session goes to status `error`, and the log gets the turn's
 * error record (turnErrorRecord), so a client reading history sees how the turn ended even after
 * the next message cleared the session's error.
 */
export async function failSession(writer: SessionWriter, error: ErrorData): Promise<void> {
  const { tenantId, sessionId } = writer.ctx;
  const record = turnErrorData(error);
  await writer.write(async (trx, emit) => {
    const message = await appendTurnError(trx, tenantId, sessionId, record);
    if (message) emit({ type: 'message.updated', message });
    await setSessionStatus(trx, tenantId, sessionId, 'error', error.message, record);
    emit({ type: 'session.status', status: 'error', detail: error.message });
    emit({ type: 'session.error', error: record });
  });
  await runStopped(writer.deps, writer.ctx);
  // A child session (task tool) that failed: its parent writes the error as the task's result.
  const session = await getSession(writer.deps.db, tenantId, sessionId);
  if (session?.parentSessionId) await notifyParent(writer.deps, session, writer.deps.logger);
}

/** The error as the log shows it: name, message and, always, whether retrying could help. */
export function turnErrorData(error: ErrorData): ErrorData {
  return { ...error, data: { ...error.data, retryable: error.data?.retryable === true } };
}

/**
 * Records a turn that ended in an error in the log, as an assistant message with `finish: error`
 * and the error on it: the failed step's own reply when it is the newest message and failed with
 * this error (it gets the finish), else a new message without parts answering the newest user
 * message. It is a final reply (the loop exits on it) and never reaches the model (toModelMessages
 * skips errored replies without content). A retried job that already wrote it writes nothing.
 */
async function appendTurnError(
  trx: Trx,
  tenantId: string,
  sessionId: string,
  error: ErrorData,
): Promise<AssistantMessage | undefined> {
  const newest = await newestMessageInfo(trx, tenantId, sessionId);
  if (!newest) return undefined;
  const now = Date.now();
  if (newest.role === 'assistant' && newest.summary !== true && newest.error?.name === error.name) {
    if (isTurnErrorInfo(newest)) return undefined;
    const info: AssistantMessage = {
      ...newest,
      finish: 'error',
      error,
      time: { ...newest.time, completed: newest.time.completed ?? now },
    };
    await updateMessageInfo(trx, tenantId, info);
    return info;
  }
  const parent = newest.role === 'user' ? newest : await newestMessageInfo(trx, tenantId, sessionId, 'user');
  const session = await getSession(trx, tenantId, sessionId);
  if (!parent || !session) return undefined;
  const created = await createAssistantMessage(trx, {
    tenantId,
    sessionId,
    id: newId('msg'),
    parentId: parent.id,
    model: session.agent.model,
    agent: session.agentName,
  });
  const info: AssistantMessage = {
    ...created,
    finish: 'error',
    error,
    time: { ...created.time, completed: now },
  };
  await updateMessageInfo(trx, tenantId, info);
  return info;
}

function isTurnErrorInfo(info: AssistantMessage): boolean {
  return isTurnError({ info, parts: [] });
}
