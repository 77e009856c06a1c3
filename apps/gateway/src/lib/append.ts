import { createHash } from 'node:crypto';
import { type Part, partTokens, type SessionEvent, type SessionStatus, type Tokenizer } from '@loopline/core';
import {
  appendUserMessage,
  findIdempotentResponse,
  getSession,
  type SessionInfo,
  saveIdempotentResponse,
  transitionSessionStatus,
  type UserPartInput,
} from '@loopline/db';
import { jobIds, PRIORITY, publishEvents } from '@loopline/queue';
import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../app.ts';
import type { AcceptedMessage } from '../schemas.ts';
import { HttpError, notFound } from './http-error.ts';
import { RUNNING_STATUSES } from './model-view.ts';

// Appending user input (a message, or a manual compaction request) and waking the session.
//
// 1. Idempotency: a stored response for (tenant, session, key) is returned as is when the request
//    hash matches (nothing is written; the wake job is re-added under its deterministic id, which
//    is a no-op while it exists and repairs a wake lost between commit and enqueue), 409 when not.
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
  await wake(deps, log, input.tenantId, input.session.id, response.message.info.id, input.session.kind);
  log.info(
    { tenantId: input.tenantId, sessionId: input.session.id, idempotencyKey: key },
    'idempotent replay',
  );
  return { response, replayed: true };
}

/**
 * Adds the session's wake job. Deterministic id: a repeat collapses onto the existing job. A batch
 * session's jobs run after interactive ones (priority).
 */
async function wake(
  deps: AppDeps,
  log: FastifyBaseLogger,
  tenantId: string,
  sessionId: string,
  messageId: string,
  kind: SessionInfo['kind'] = 'interactive',
) {
  try {
    await deps.queues.add(
      'step',
      jobIds.wake(sessionId, messageId),
      { tenantId, sessionId, reason: 'message' },
      { priority: kind === 'batch' ? PRIORITY.batch : PRIORITY.interactive },
    );
  } catch (err) {
    log.error({ err, tenantId, sessionId, messageId }, 'wake enqueue failed after commit');
    throw new HttpError(
      'unavailable',
      'The message was stored but the session could not be woken; retry with the same Idempotency-Key',
      { messageId },
    );
  }
}
