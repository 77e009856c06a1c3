import { createHash } from 'node:crypto';
import { type Part, partTokens, type SessionEvent, type SessionStatus, type Tokenizer } from '@loopline/core';
import {
  type AppendAndQueueInput,
  type AppendAndQueueResult,
  appendUserMessageAndQueue,
  type Db,
  findIdempotentResponse,
  getSession,
  type SessionInfo,
  saveIdempotentResponse,
  type UserPartInput,
} from '@loopline/db';
import { publishEvents, WAKE, wakeSession } from '@loopline/queue';
import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../plugins/deps.ts';
import type { AcceptedMessage } from '../schemas/messages.ts';
import { HttpError, notFound } from './http-error.ts';
import { RUNNING_STATUSES } from './model-view.ts';

// Appending user input (a message, or a manual compaction request) and waking the session. One
// implementation for every caller (messages, chat, compact), with or without an Idempotency-Key.
//
// 1. Idempotency: a stored response for (tenant, session, key) is returned as is when the request
//    hash matches (nothing is written; the wake job is re-added under its deterministic id, which
//    is a no-op while it exists and repairs a wake lost between commit and enqueue; a session with
//    work due whose wake job has finished gets one more wake per fence: see wake()), 409 when not.
// 2. The write is one statement (db appendUserMessageAndQueue): the session read and locked, its
//    status idle|error → queued, the seq, the message and its parts; under load, one statement for
//    the messages of several sessions (group commit, lib/append-batch.ts). With an idempotency row
//    to save or a refusal to check, it runs alone in a transaction with them: a refusal (read from
//    the statement's own status) or a lost idempotency race rolls all of it back.
// 3. After commit: the events and the wake job, sent together (events first). Events are a live
//    view; a failed publish is logged, not returned as an error (PostgreSQL holds the truth).

export interface AppendInput {
  tenantId: string;
  sessionId: string;
  /**
   * The session as this request read it, when it did: an idempotent replay wakes with its kind,
   * status and fence (read here when absent), and `refuse` answers from it before any write.
   */
  session?: SessionInfo;
  parts: UserPartInput[];
  system?: string;
  synthetic?: boolean;
  idempotency?: { key: string; requestHash: string };
  /** Refuses the append for a status (checked again on the status the write found); thrown as is. */
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

/** Appends the user message (or compaction request), wakes the session and publishes the events. */
export async function appendAndWake(
  deps: AppDeps,
  log: FastifyBaseLogger,
  input: AppendInput,
): Promise<AppendResult> {
  const { tenantId, sessionId } = input;
  if (input.idempotency) {
    const replay = await replayed(deps, log, input);
    if (replay) return replay;
  }
  const early = input.session && input.refuse?.(input.session.status);
  if (early) throw early;

  const toAppend: AppendAndQueueInput = {
    tenantId,
    sessionId,
    parts: input.parts,
    ...(input.system !== undefined ? { system: input.system } : {}),
    ...(input.synthetic ? { synthetic: true } : {}),
    wakeFrom: ['idle', 'error'],
    midRunIn: RUNNING_STATUSES,
  };
  // In a transaction of its own (`trx`) the statement runs there; alone it may be group-committed
  // with other sessions' messages (lib/append-batch.ts).
  const write = async (trx?: Db): Promise<AppendAndQueueResult> => {
    const committed = trx
      ? await appendUserMessageAndQueue(trx, toAppend)
      : await deps.appends.append(toAppend);
    if (!committed) throw notFound('session', sessionId);
    const refusal = input.refuse?.(committed.session.status);
    if (refusal) throw refusal;
    return committed;
  };

  let committed: AppendAndQueueResult;
  try {
    // Alone, the statement is its own transaction; with a refusal or an idempotency row, one more.
    committed = !(input.idempotency || input.refuse)
      ? await write()
      : await deps.db.transaction().execute(async (trx) => {
          const written = await write(trx);
          if (input.idempotency) {
            const saved = await saveIdempotentResponse(trx, {
              tenantId,
              sessionId,
              key: input.idempotency.key,
              requestHash: input.idempotency.requestHash,
              response: accepted(written),
            });
            if (!saved) throw new IdempotencyRace();
          }
          return written;
        });
  } catch (err) {
    if (!(err instanceof IdempotencyRace)) throw err;
    // A concurrent request with the same key committed first: answer as its replay.
    const replay = await replayed(deps, log, input);
    if (!replay) throw err;
    return replay;
  }

  const { message, session, statusChanged } = committed;
  const messageId = message.info.id;
  const events: SessionEvent[] = [
    { type: 'message.updated', message: message.info },
    ...message.parts.map((part): SessionEvent => ({ type: 'part.updated', part })),
  ];
  if (statusChanged) events.push({ type: 'session.status', status: 'queued' });
  // Sent before the wake job (same connection, so Redis runs it first: a worker's own events
  // follow these) and awaited with it; the server's connection sends both in one socket write
  // (createRedis coalesceWrites): one wait for both round trips.
  const published = publishEvents(deps.redis, deps.keys, sessionId, events).catch((err: unknown) =>
    log.warn({ err, tenantId, sessionId, messageId }, 'event publish failed'),
  );
  try {
    await wake(deps, log, tenantId, sessionId, messageId, session.kind);
  } finally {
    await published;
  }
  log.info({ tenantId, sessionId, messageId, status: session.status }, 'user message appended');
  return { response: accepted(committed), replayed: false };
}

function accepted({ message, session }: AppendAndQueueResult): AcceptedMessage {
  return { message, session: { id: session.id, status: session.status } };
}

async function replayed(
  deps: AppDeps,
  log: FastifyBaseLogger,
  input: AppendInput,
): Promise<AppendResult | undefined> {
  const { key, requestHash } = input.idempotency!;
  const prior = await findIdempotentResponse(deps.db, input.tenantId, input.sessionId, key);
  if (!prior) return undefined;
  if (prior.requestHash !== requestHash)
    throw new HttpError(
      'idempotency_conflict',
      'This Idempotency-Key was already used with a different request body',
      { idempotencyKey: key },
    );
  const response = prior.response as AcceptedMessage;
  const session = input.session ?? (await getSession(deps.db, input.tenantId, input.sessionId));
  if (!session) throw notFound('session', input.sessionId);
  await wake(deps, log, input.tenantId, input.sessionId, response.message.info.id, session.kind, session);
  log.info(
    { tenantId: input.tenantId, sessionId: input.sessionId, idempotencyKey: key },
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
