import {
  type AssistantMessage,
  countPart,
  deferredOf,
  errorData,
  interruptTool,
  isTurnStart,
  newestByRole,
  type Part,
  turnEnded,
  type WithParts,
} from '@loopline/core';
import {
  clearAbortRequest,
  createAssistantMessage,
  loadHistory,
  lockSession,
  recordAbortRequest,
  setSessionStatus,
  updateMessageInfo,
  updatePart,
} from '@loopline/db';
import {
  type AbortSubscription,
  duplicateRedis,
  jobIds,
  publishAbort,
  subscribeAborts,
  wakeSession,
} from '@loopline/queue';
import type { Logger } from 'pino';
import { SESSION_ABORT_REASON } from '../abort-reason.ts';
import type { Bus, Jobs, Log, Resources, Store, Tokens } from '../deps.ts';
import { runStopped } from '../fairness/loop-stopped.ts';
import type { SessionWriter } from '../session-writer.ts';
import { notifyParent } from './notify.ts';

// Abort (POST /v1/sessions/:id/abort), worker side. Durable first: the gateway records
// `abort_requested_seq` and enqueues an `abort` step before it broadcasts, so the session's next
// step job ends the turn whatever happens to the broadcast. Fast path: each process keeps the
// cancel function of the step (or summary compaction) job it runs per session (SessionJobs); a
// broadcast cancels it, which stops the model stream and webhook calls, and the job ends the turn
// under its own fence. endAbortedTurn (one fenced transaction): the unfinished reply gets
// AbortedError, running and deferred calls become interrupted (child sessions aborted), an
// aborted reply closes the turn unless a user message came after the request, and the session
// goes idle with the request cleared.

/** The step jobs this process runs, by session: what a broadcast cancels. */
export class SessionJobs {
  private readonly running = new Map<string, Set<() => void>>();

  /** Registers `cancel` for the session until the returned function is called. */
  track(sessionId: string, cancel: () => void): () => void {
    let set = this.running.get(sessionId);
    if (!set) {
      set = new Set();
      this.running.set(sessionId, set);
    }
    set.add(cancel);
    return () => {
      const current = this.running.get(sessionId);
      current?.delete(cancel);
      if (current?.size === 0) this.running.delete(sessionId);
    };
  }

  /** Cancels every tracked job of these sessions; returns how many. */
  cancel(sessionIds: readonly string[]): number {
    let n = 0;
    for (const id of sessionIds) {
      for (const cancel of this.running.get(id) ?? []) {
        cancel();
        n++;
      }
    }
    return n;
  }
}

/** Subscribes this process to the abort broadcast; close() on shutdown. */
export function listenForAborts(deps: Bus & Log, jobs: SessionJobs): { close(): Promise<void> } {
  const connection = duplicateRedis(deps.redis, { maxRetriesPerRequest: null });
  connection.on('error', (err) => deps.logger.warn({ err }, 'abort subscription connection error'));
  const subscribed: Promise<AbortSubscription | undefined> = subscribeAborts(connection, deps.keys, (ids) => {
    const n = jobs.cancel(ids);
    if (n > 0) deps.logger.info({ sessionIds: ids, jobs: n }, 'abort broadcast: cancelled running step');
  }).catch((err: unknown) => {
    deps.logger.warn({ err }, 'abort subscription failed; aborts wait for the next step');
    connection.disconnect();
    return undefined;
  });
  return {
    async close() {
      const sub = await subscribed;
      await sub?.close();
    },
  };
}

/**
 * Records an abort of these sessions (each one that is not idle or error), enqueues the step that
 * ends each turn, and broadcasts it. The worker's cascade to child sessions; the gateway has its own
 * (apps/gateway/src/lib/abort.ts) with the same three moves.
 */
export async function requestSessionAbort(
  deps: Store & Bus & Jobs,
  tenantId: string,
  sessionIds: readonly string[],
  log: Logger,
): Promise<void> {
  const recorded: string[] = [];
  for (const sessionId of sessionIds) {
    try {
      const request = await recordAbortRequest(deps.db, tenantId, sessionId);
      if (!request?.recorded) continue;
      recorded.push(sessionId);
      await wakeSession(deps.queues, 'abort', { sessionId, abortSeq: request.session.lastSeq }, { tenantId });
    } catch (err) {
      // The parent's part is interrupted already; a child left running only costs tokens.
      log.warn({ err, childSessionId: sessionId }, 'could not abort a child session');
    }
  }
  try {
    await publishAbort(deps.redis, deps.keys, recorded);
  } catch (err) {
    log.warn({ err, sessionIds: recorded }, 'abort broadcast failed; the abort jobs end the turns');
  }
}

export type AbortOutcome =
  /** No abort was requested. */
  | 'none'
  /** The turn was ended; the session is idle. */
  | 'stopped'
  /** The turn was ended, but a user message newer than the request starts another: go on. */
  | 'continue';

/** Ends the turn if an abort was requested (see the top of this file). Under the step's lease. */
export async function endAbortedTurn(
  deps: Resources & Tokens,
  writer: SessionWriter,
  log: Logger,
): Promise<AbortOutcome> {
  const { tenantId, sessionId } = writer.ctx;
  const now = Date.now();
  const done = await writer.write(async (trx, emit) => {
    // The fence check already holds the row lock: nothing is appended meanwhile.
    const session = await lockSession(trx, tenantId, sessionId);
    if (!session || session.abortRequestedSeq === null) return undefined;
    const requestSeq = session.abortRequestedSeq;
    const history = await loadHistory(trx, tenantId, sessionId, { fromSeq: session.boundarySeq });
    const children: string[] = [];
    const after: WithParts[] = [];
    for (const msg of history) {
      after.push(msg);
      if (msg.info.role !== 'assistant' || msg.info.summary) continue;
      const open = msg.info.finish === undefined && !msg.info.error;
      for (const part of msg.parts) {
        if (part.type !== 'tool') continue;
        const deferred = deferredOf(part);
        const unfinished = part.state.status === 'pending' || part.state.status === 'running';
        if (!(deferred || (open && unfinished))) continue;
        const interrupted = countPart(interruptTool(part, now), deps.tokenizer);
        await updatePart(trx, tenantId, interrupted as Part);
        emit({ type: 'part.updated', part: interrupted });
        if (deferred?.childSessionId) children.push(deferred.childSessionId);
      }
      if (!open) continue;
      const info: AssistantMessage = {
        ...(msg.info as AssistantMessage),
        error: errorData('AbortedError'),
        time: { ...msg.info.time, completed: now },
      };
      await updateMessageInfo(trx, tenantId, info);
      emit({ type: 'message.updated', message: info });
      after[after.length - 1] = { ...msg, info };
    }

    const superseded = history.some((m) => isTurnStart(m) && m.info.seq > requestSeq);
    if (!superseded && !turnEnded(after)) {
      const lastUser = newestByRole(history, 'user');
      if (lastUser) {
        // Nothing was in flight (queued, between steps, waiting): an empty aborted reply ends the turn.
        const marker = await createAssistantMessage(trx, {
          tenantId,
          sessionId,
          parentId: lastUser.info.id,
          model: session.agent.model,
          agent: session.agentName,
          now,
        });
        const info: AssistantMessage = {
          ...marker,
          error: errorData('AbortedError'),
          time: { created: now, completed: now },
        };
        await updateMessageInfo(trx, tenantId, info);
        emit({ type: 'message.updated', message: info });
      }
    }
    await clearAbortRequest(trx, tenantId, sessionId);
    if (!superseded && session.status !== 'idle') {
      await setSessionStatus(trx, tenantId, sessionId, 'idle', null, null);
      emit({ type: 'session.status', status: 'idle' });
      emit({ type: 'session.idle' });
    }
    return { superseded, children, session };
  });
  if (!done) return 'none';
  log.info({ superseded: done.superseded, children: done.children.length }, 'turn aborted');
  if (done.children.length > 0) await requestSessionAbort(deps, tenantId, done.children, log);
  if (done.superseded) return 'continue';
  await runStopped(deps, writer.ctx);
  await deps.queues.add('prune', jobIds.prune(sessionId, done.session.stepCount, 'idle'), {
    tenantId,
    sessionId,
    purpose: 'idle',
    overflow: false,
    rejected: false,
    stepCount: done.session.stepCount,
  });
  await notifyParent(deps, done.session, log);
  return 'stopped';
}

/** BullMQ's cancellation signal of each tracked step job (withSessionLease combines it). */
const cancellation = new WeakMap<object, AbortSignal>();

/** The cancellation signal of a step job tracked by trackSessionJob, if any. */
export function cancellationSignalOf(job: object): AbortSignal | undefined {
  return cancellation.get(job);
}

/**
 * Tracks a step job for the abort broadcast: cancelling it aborts `signal`, the one BullMQ gave
 * the job (worker.cancelJob), which withSessionLease hands to the work combined with the lease's.
 */
export function trackSessionJob(
  jobs: SessionJobs,
  job: { id?: string | undefined; data: { sessionId?: unknown } },
  worker: { cancelJob(jobId: string, reason?: string): boolean },
  signal: AbortSignal | undefined,
): (() => void) | undefined {
  const sessionId = job.data.sessionId;
  const jobId = job.id;
  if (typeof sessionId !== 'string' || !jobId || !signal) return undefined;
  cancellation.set(job, signal);
  const untrack = jobs.track(sessionId, () => {
    worker.cancelJob(jobId, SESSION_ABORT_REASON);
  });
  return () => {
    untrack();
    cancellation.delete(job);
  };
}
