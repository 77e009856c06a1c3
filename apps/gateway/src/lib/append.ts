import { createHash } from 'node:crypto';
import { type Part, partTokens, type SessionEvent, type SessionStatus, type Tokenizer } from '@loopline/core';
import {
  appendUserMessage,
  appendUserMessageAndQueue,
  findIdempotentResponse,
  getSession,
  type SessionInfo,
  saveIdempotentResponse,
  transitionSessionStatus,
  type UserPartInput,
} from '@loopline/db';
import { publishEvents, WAKE, wakeSession } from '@loopline/queue';
import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../app.ts';
import type { AcceptedMessage } from '../schemas.ts';
import { HttpError, notFound } from './http-error.ts';
import { RUNNING_STATUSES } from './model-view.ts';

// Appending user input (a message, or a manual compaction request) and waking the session.
//
// 1. Idempotency: a stored response for (tenant, session, key) is returned as is when the request
//    hash matches (nothing is written; the wake job is re-added under its deterministic id, which
//    is a no-op while it exists and repairs a wake lost between commit and enqueue; a session with
//    work due whose wake job has finished gets one more wake per fence: see wake()), 409 when not.
// 2. One transaction: status idle|error → queued, the message and its parts, the idempotency row.
//    A refusal (409) or a lost idempotency race rolls all of it back.
// 3. After commit: the wake job, then the events. Events are a live view; a failed publish is
//    logged, not returned as an error (PostgreSQL holds the truth).

export interface AppendInput {
  tenantId: string;
  session: SessionInfo;
  parts: UserPartInput[];
  system?: string;
  synthetic?: boolean;
  idempotency?: { key: string; requestHash: string };
  /** Refuses the append for a status (read inside the transaction); the error is thrown as is. */
  refuse?: (status: SessionStatus) => HttpError | undefined;
}

export interface AppendResult {
  response: AcceptedMessage;
  replayed: boolean;
}

/** Parts with their token counts (core's partTokens), computed once, before the transaction. */
export function withTokens(parts: UserPartInput[], tokenizer: Tokenizer): UserPartInput[] {
  return parts.map((p) => ({
    ...p,
    tokens: partTokens({ ...p, id: '', sessionId: '', messageId: '' } as Part, tokenizer),
  }));
}

/** sha256 of the canonical JSON (keys sorted) of a validated body. */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

class IdempotencyRace extends Error {}

export async function appendAndWake(
  deps: AppDeps,
  log: FastifyBaseLogger,
  input: AppendInput,
): Promise<AppendResult> {
  const { tenantId, session } = input;
  const sessionId = session.id;
  if (input.idempotency) {
    const replay = await replayed(deps, log, input);
    if (replay) return replay;
  }
  const refusal = input.refuse?.(session.status);
  if (refusal) throw refusal;

  let committed: { response: AcceptedMessage; statusChanged: boolean };
  try {
    committed = await deps.db.transaction().execute(async (trx) => {
      const queued = await transitionSessionStatus(trx, tenantId, sessionId, ['idle', 'error'], 'queued');
      let status: SessionStatus = 'queued';
      if (!queued) {
        const current = await getSession(trx, tenantId, sessionId);
        if (!current) throw notFound('session', sessionId);
        status = current.status;
      }
      const again = input.refuse?.(status);
      if (again) throw again;
      const message = await appendUserMessage(trx, {
        tenantId,
        sessionId,
        agent: session.agentName,
        parts: input.parts,
        ...(input.system !== undefined ? { system: input.system } : {}),
        ...(input.synthetic ? { synthetic: true } : {}),
        ...(RUNNING_STATUSES.includes(status) ? { midRun: true } : {}),
      });
      const response: AcceptedMessage = { message, session: { id: sessionId, status } };
      if (input.idempotency) {
        const saved = await saveIdempotentResponse(trx, {
          tenantId,
          sessionId,
          key: input.idempotency.key,
          requestHash: input.idempotency.requestHash,
          response,
        });
        if (!saved) throw new IdempotencyRace();
      }
      return { response, statusChanged: queued };
    });
  } catch (err) {
    if (!(err instanceof IdempotencyRace)) throw err;
    // A concurrent request with the same key committed first: answer as its replay.
    const replay = await replayed(deps, log, input);
    if (!replay) throw err;
    return replay;
  }

  const { response, statusChanged } = committed;
  const messageId = response.message.info.id;
  await wake(deps, log, tenantId, sessionId, messageId, session.kind);
  const events: SessionEvent[] = [
    { type: 'message.updated', message: response.message.info },
    ...response.message.parts.map((part): SessionEvent => ({ type: 'part.updated', part })),
  ];
  if (statusChanged) events.push({ type: 'session.status', status: 'queued' });
  try {
    await publishEvents(deps.redis, deps.keys, sessionId, events);
  } catch (err) {
    log.warn({ err, tenantId, sessionId, messageId }, 'event publish failed');
  }
  log.info({ tenantId, sessionId, messageId, status: response.session.status }, 'user message appended');
  return { response, replayed: false };
}

/**
 * POST …/messages without an Idempotency-Key: the session read, the status transition, the seq,
 * the message and its parts in ONE statement (db appendUserMessageAndQueue) instead of 8–9 in a
 * transaction. Unknown or another tenant's session: 404, nothing written. Then the wake job and
 * the events, as above.
 */
export async function appendMessageAndWake(
  deps: AppDeps,
  log: FastifyBaseLogger,
  input: { tenantId: string; sessionId: string; parts: UserPartInput[]; system?: string },
): Promise<AppendResult> {
  const { tenantId, sessionId } = input;
  const committed = await appendUserMessageAndQueue(deps.db, {
    tenantId,
    sessionId,
    parts: input.parts,
    ...(input.system !== undefined ? { system: input.system } : {}),
    wakeFrom: ['idle', 'error'],
    midRunIn: RUNNING_STATUSES,
  });
  if (!committed) throw notFound('session', sessionId);
  const { message, session, statusChanged } = committed;
  const response: AcceptedMessage = { message, session: { id: sessionId, status: session.status } };
  const messageId = message.info.id;
  await wake(deps, log, tenantId, sessionId, messageId, session.kind);
  const events: SessionEvent[] = [
    { type: 'message.updated', message: message.info },
    ...message.parts.map((part): SessionEvent => ({ type: 'part.updated', part })),
  ];
  if (statusChanged) events.push({ type: 'session.status', status: 'queued' });
  try {
    await publishEvents(deps.redis, deps.keys, sessionId, events);
  } catch (err) {
    log.warn({ err, tenantId, sessionId, messageId }, 'event publish failed');
  }
  log.info({ tenantId, sessionId, messageId, status: session.status }, 'user message appended');
  return { response, replayed: false };
}

async function replayed(
  deps: AppDeps,
  log: FastifyBaseLogger,
  input: AppendInput,
): Promise<AppendResult | undefined> {
  const { key, requestHash } = input.idempotency!;
  const prior = await findIdempotentResponse(deps.db, input.tenantId, input.session.id, key);
  if (!prior) return undefined;
  if (prior.requestHash !== requestHash)
    throw new HttpError(
      'idempotency_conflict',
      'This Idempotency-Key was already used with a different request body',
      { idempotencyKey: key },
    );
  const response = prior.response as AcceptedMessage;
  await wake(
    deps,
    log,
    input.tenantId,
    input.session.id,
    response.message.info.id,
    input.session.kind,
    input.session,
  );
  log.info(
    { tenantId: input.tenantId, sessionId: input.session.id, idempotencyKey: key },
    'idempotent replay',
  );
  return { response, replayed: true };
}

/** Statuses in which a replay re-wakes the session: work is due, and the job for it may be gone. */
const REWAKE_ON_REPLAY: readonly SessionStatus[] = ['queued', 'running', 'compacting'];

/**
 * Adds the session's wake job. Deterministic id: a repeat collapses onto the existing job. A batch
 * session's jobs run after interactive ones (priority).
 *
 * An idempotent replay (`replay`: the session as read for this request) of a session that still
 * has work due (queued, running, compacting) whose first wake job has already finished adds one
 * more wake, under `wake-<session>-<message>-r<fence>`. The first id cannot do it: BullMQ keeps the
 * completed job for a day and an add under its id is a no-op, so a session whose later job was
 * lost (Redis restart, orphaned runner) would never move. While the first wake job is still
 * pending (or gone altogether, with Redis), the plain id is right: it collapses onto it, or
 * re-adds it. Why the fence, and not removing the completed job first or a random id:
 * - every runner takes a new fence (PostgreSQL), so while the session is stuck its fence stands
 *   still: concurrent and repeated replays collapse onto one job — it re-wakes exactly once more;
 *   once that job has run, the fence has moved, and a replay after a later loss wakes it again;
 * - remove-then-add is two steps another replay can interleave with, cannot remove an active
 *   job, and erases the job record the inspector shows;
 * - a replay that meets a live runner (the state read is a snapshot) costs one extra step job: it
 *   waits for the lock, re-derives everything from the log and joins the runner's chain (the next
 *   step's id derives from the step count), like the resume job a superseded runner leaves
 *   (lease-runner.ts). Idle, error and waiting sessions need no wake (nothing is due, or a
 *   client/subagent answer wakes them).
 */
async function wake(
  deps: AppDeps,
  log: FastifyBaseLogger,
  tenantId: string,
  sessionId: string,
  messageId: string,
  kind: SessionInfo['kind'] = 'interactive',
  replay?: Pick<SessionInfo, 'status' | 'fence'>,
) {
  try {
    if (replay && REWAKE_ON_REPLAY.includes(replay.status)) {
      const first = await deps.queues.step.getJobState(WAKE.message.jobId({ sessionId, messageId }));
      if (first === 'completed' || first === 'failed') {
        const args = { sessionId, messageId, fence: replay.fence };
        await wakeSession(deps.queues, 'message-replay', args, { tenantId, kind });
        return;
      }
    }
    await wakeSession(deps.queues, 'message', { sessionId, messageId }, { tenantId, kind });
  } catch (err) {
    log.error({ err, tenantId, sessionId, messageId }, 'wake enqueue failed after commit');
    throw new HttpError(
      'unavailable',
      'The message was stored but the session could not be woken; retry with the same Idempotency-Key',
      { messageId },
    );
  }
}
