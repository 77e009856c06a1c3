import {
  type AgentConfig,
  type ErrorData,
  newId,
  type SessionKind,
  type SessionStatus,
} from '@loopline/core';
import { sql, type UpdateObject } from 'kysely';
import type { Db, Trx } from '../client.ts';
import { NotFoundError } from '../errors.ts';
import type { DB } from '../schema.ts';
import { toJson, toJsonOrNull } from '../tables/columns.ts';
import type { LastUsage } from '../tables/session.table.ts';
import { type SessionInfo, toSession } from './mappers.ts';

// Sessions: creation, reads, status and the worker's progress fields. Status writes by the
// gateway (queued) need no fence; the worker makes its writes inside withFence.

export interface CreateSessionInput {
  tenantId: string;
  agentName: string;
  /** The agent's config resolved at creation (plus overrides); the session keeps it. */
  agent: AgentConfig;
  metadata?: Record<string, unknown>;
  parentSessionId?: string;
  title?: string;
  /** Defaults to newId('ses'). */
  id?: string;
  /** Defaults to interactive. */
  kind?: SessionKind;
}

/** Creates a session (its parent must be the tenant's, else NotFoundError). */
export async function createSession(db: Db, input: CreateSessionInput): Promise<SessionInfo> {
  if (input.parentSessionId) {
    const parent = await getSession(db, input.tenantId, input.parentSessionId);
    if (!parent) throw new NotFoundError('session', input.parentSessionId);
  }
  const row = await db
    .insertInto('sessions')
    .values({
      id: input.id ?? newId('ses'),
      tenant_id: input.tenantId,
      agent_name: input.agentName,
      agent: toJson(input.agent),
      metadata: toJson(input.metadata ?? {}),
      parent_session_id: input.parentSessionId ?? null,
      title: input.title ?? null,
      ...(input.kind ? { kind: input.kind } : {}),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toSession(row);
}

/** The tenant's session, or undefined. */
export async function getSession(
  db: Db,
  tenantId: string,
  sessionId: string,
): Promise<SessionInfo | undefined> {
  const row = await db
    .selectFrom('sessions')
    .selectAll()
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row ? toSession(row) : undefined;
}

/**
 * The session row, locked (SELECT … FOR UPDATE) until the transaction ends. Every other write of
 * the session — an append (allocateSeq), a status change, a fenced worker write — waits for it,
 * so a check made under the lock still holds at commit.
 */
export async function lockSession(
  trx: Trx,
  tenantId: string,
  sessionId: string,
): Promise<SessionInfo | undefined> {
  const row = await trx
    .selectFrom('sessions')
    .selectAll()
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .forUpdate()
    .executeTakeFirst();
  return row ? toSession(row) : undefined;
}

export interface ListSessionsOptions {
  /** Default 50, at most 500. */
  limit?: number;
  /** Only sessions created before this one (pagination cursor: the last id of the previous page). */
  before?: string;
  parentSessionId?: string;
}

/** Newest first. */
export async function listSessions(
  db: Db,
  tenantId: string,
  opts: ListSessionsOptions = {},
): Promise<SessionInfo[]> {
  const limit = Math.min(Math.max(opts.limit ?? 50, 1), 500);
  let query = db.selectFrom('sessions').selectAll().where('tenant_id', '=', tenantId);
  if (opts.parentSessionId) query = query.where('parent_session_id', '=', opts.parentSessionId);
  if (opts.before) {
    query = query.where(
      sql<boolean>`(created_at, id) < (select c.created_at, c.id from sessions c where c.id = ${opts.before} and c.tenant_id = ${tenantId})`,
    );
  }
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  return rows.map(toSession);
}

/**
 * Sets status, detail and error together: a detail or error not given is cleared, so they always
 * describe the current status.
 */
export async function setSessionStatus(
  db: Db,
  tenantId: string,
  sessionId: string,
  status: SessionStatus,
  detail?: string | null,
  error?: ErrorData | null,
): Promise<void> {
  const result = await db
    .updateTable('sessions')
    .set({ status, status_detail: detail ?? null, error: toJsonOrNull(error), updated_at: sql<Date>`now()` })
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw new NotFoundError('session', sessionId);
}

/** Compare-and-set of the status: changes it only when it is one of `from`; true when it did. */
export async function transitionSessionStatus(
  db: Db,
  tenantId: string,
  sessionId: string,
  from: readonly SessionStatus[],
  to: SessionStatus,
  detail?: string | null,
  error?: ErrorData | null,
): Promise<boolean> {
  if (from.length === 0) return false;
  const result = await db
    .updateTable('sessions')
    .set({
      status: to,
      status_detail: detail ?? null,
      error: toJsonOrNull(error),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .where('status', 'in', [...from])
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export interface SessionProgress {
  stepCount?: number;
  boundarySeq?: number | null;
  lastUsage?: LastUsage | null;
  tokenRatio?: number | null;
  tokenRatioWeight?: number | null;
  compactionCount?: number;
  lastCompactionAt?: Date | null;
  title?: string | null;
}

/** The SET clause of a progress patch (updated_at always; absent keys untouched). */
export function progressSet(patch: SessionProgress): UpdateObject<DB, 'sessions'> {
  const set: UpdateObject<DB, 'sessions'> = { updated_at: sql<Date>`now()` };
  if (patch.stepCount !== undefined) set.step_count = patch.stepCount;
  if (patch.boundarySeq !== undefined) set.boundary_seq = patch.boundarySeq;
  if (patch.lastUsage !== undefined) set.last_usage = toJsonOrNull(patch.lastUsage);
  if (patch.tokenRatio !== undefined) set.token_ratio = patch.tokenRatio;
  if (patch.tokenRatioWeight !== undefined) set.token_ratio_weight = patch.tokenRatioWeight;
  if (patch.compactionCount !== undefined) set.compaction_count = patch.compactionCount;
  if (patch.lastCompactionAt !== undefined) set.last_compaction_at = patch.lastCompactionAt;
  if (patch.title !== undefined) set.title = patch.title;
  return set;
}

/** Writes the given progress fields (absent keys stay as they are). Call inside withFence. */
export async function updateSessionProgress(
  trx: Trx,
  tenantId: string,
  sessionId: string,
  patch: SessionProgress,
): Promise<void> {
  const set = progressSet(patch);
  const result = await trx
    .updateTable('sessions')
    .set(set)
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw new NotFoundError('session', sessionId);
}

/**
 * Sets the title only while it is still null (the background title job: it holds no session lock
 * and must never overwrite a title set since). True when it wrote.
 */
export async function setSessionTitleIfUnset(
  db: Db,
  tenantId: string,
  sessionId: string,
  title: string,
): Promise<boolean> {
  const result = await db
    .updateTable('sessions')
    .set({ title, updated_at: sql<Date>`now()` })
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .where('title', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
