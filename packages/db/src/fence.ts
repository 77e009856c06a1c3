import type { ErrorData, SessionStatus } from '@loopline/core';
import { sql, type UpdateObject } from 'kysely';
import type { Db, Trx } from './client.ts';
import { NotFoundError, StaleFenceError } from './errors.ts';
import { type SessionInfo, toSession } from './repo/mappers.ts';
import { progressSet, type SessionProgress } from './repo/sessions.ts';
import type { DB } from './schema.ts';
import { toJsonOrNull } from './tables/columns.ts';

// Fencing: the session lock lives in Redis, but the token that guards writes lives here.
// A new lock holder calls acquireFence (fence + 1, so a Redis restart cannot reset it); every
// write it makes runs in withFence, whose first statement matches the session row only while
// that fence is current. A stale holder's transaction therefore fails before writing anything.
// The UPDATE also takes the session row lock, so fenced writes of one session are serialised
// and a concurrent acquireFence waits for the current write to commit.

export interface Fence {
  tenantId: string;
  sessionId: string;
  fence: number;
}

/**
 * What a fenced transaction may change on the session row in its first statement (the fence
 * check itself): progress fields, the status, and a seq for one new message. Folding these into
 * the check saves the separate UPDATE each of them would cost; the row lock and the
 * zero-rows-means-stale rule are the same.
 */
export interface FencedSessionPatch extends SessionProgress {
  /** Sets status, detail and error together (as setSessionStatus: absent detail/error are cleared). */
  status?: { status: SessionStatus; detail?: string | null; error?: ErrorData | null };
  /** Takes the next message seq (sessions.last_seq + 1), returned as FencedRow.lastSeq. */
  allocateSeq?: boolean;
  /** The writer's trace context (tracing on): what the reconciler continues after a loss. */
  traceparent?: string;
}

/** The session row as the fence check left it. */
export interface FencedRow {
  lastSeq: number;
}

/**
 * Runs fn in one transaction that first checks the fence; a stale fence throws StaleFenceError.
 * With `patch`, the check also writes those session fields (one statement instead of two).
 */
export async function withFence<T>(
  db: Db,
  f: Fence,
  fn: (trx: Trx, row: FencedRow) => Promise<T>,
  patch?: FencedSessionPatch,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    const set: UpdateObject<DB, 'sessions'> = patch ? progressSet(patch) : { updated_at: sql<Date>`now()` };
    if (patch?.status) {
      set.status = patch.status.status;
      set.status_detail = patch.status.detail ?? null;
      set.error = toJsonOrNull(patch.status.error);
    }
    if (patch?.allocateSeq) set.last_seq = sql<number>`last_seq + 1`;
    if (patch?.traceparent) set.traceparent = patch.traceparent;
    const updated = await trx
      .updateTable('sessions')
      .set(set)
      .where('id', '=', f.sessionId)
      .where('tenant_id', '=', f.tenantId)
      .where('fence', '=', f.fence)
      .returning('last_seq')
      .executeTakeFirst();
    if (!updated) throw await staleFenceError(trx, f);
    return fn(trx, { lastSeq: updated.last_seq });
  });
}

/**
 * The error for a fenced write that matched no session row: a newer runner took the fence (or the
 * session is gone). Reads the current fence for the error's data; every fenced write path uses it.
 */
export async function staleFenceError(db: Db | Trx, f: Fence): Promise<StaleFenceError> {
  const row = await db
    .selectFrom('sessions')
    .select('fence')
    .where('id', '=', f.sessionId)
    .where('tenant_id', '=', f.tenantId)
    .executeTakeFirst();
  return new StaleFenceError({ sessionId: f.sessionId, fence: f.fence, currentFence: row?.fence ?? null });
}

/** Takes the next fencing token for a session (called by the holder of the Redis lock). */
export async function acquireFence(db: Db, tenantId: string, sessionId: string): Promise<number> {
  return (await acquireFenceWithSession(db, tenantId, sessionId)).fence;
}

/**
 * acquireFence that also returns the session row as the increment left it (UPDATE … RETURNING *),
 * so the new holder needs no getSession right after.
 */
export async function acquireFenceWithSession(
  db: Db,
  tenantId: string,
  sessionId: string,
): Promise<{ fence: number; session: SessionInfo }> {
  const row = await db
    .updateTable('sessions')
    .set((eb) => ({ fence: eb('fence', '+', 1), updated_at: sql<Date>`now()` }))
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new NotFoundError('session', sessionId);
  return { fence: row.fence, session: toSession(row) };
}

/** The session's current fence, for logs and tests. */
export async function currentFence(db: Db, tenantId: string, sessionId: string): Promise<number | undefined> {
  const row = await db
    .selectFrom('sessions')
    .select('fence')
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row?.fence;
}
