import { sql } from 'kysely';
import type { Db, Trx } from '../client.ts';
import type { SessionInfo } from './mappers.ts';
import { lockSession } from './sessions.ts';

// Session control state on the session row: the durable abort request (POST …/abort) and the
// child sessions a parent may have to abort with it.

export interface AbortRequest {
  /** The session as it was when the request was recorded (abortRequestedSeq set when recorded). */
  session: SessionInfo;
  /** false: the session was idle or error, nothing to abort (nothing written). */
  recorded: boolean;
}

/**
 * Records an abort of the current turn under the session row lock, unless the session is idle or
 * error: `abort_requested_seq = last_seq` (user messages up to it belong to the aborted turn).
 * Undefined for an unknown session. Runs in the caller's transaction or opens one.
 */
export async function recordAbortRequest(
  db: Db,
  tenantId: string,
  sessionId: string,
): Promise<AbortRequest | undefined> {
  const run = async (trx: Trx): Promise<AbortRequest | undefined> => {
    const session = await lockSession(trx, tenantId, sessionId);
    if (!session) return undefined;
    if (session.status === 'idle' || session.status === 'error') return { session, recorded: false };
    await trx
      .updateTable('sessions')
      .set({ abort_requested_seq: session.lastSeq, updated_at: sql<Date>`now()` })
      .where('id', '=', sessionId)
      .where('tenant_id', '=', tenantId)
      .execute();
    return { session: { ...session, abortRequestedSeq: session.lastSeq }, recorded: true };
  };
  return db.isTransaction ? run(db as Trx) : db.transaction().execute(run);
}

/** Clears a consumed abort request. Call inside withFence (the runner that ended the turn). */
export async function clearAbortRequest(trx: Trx, tenantId: string, sessionId: string): Promise<void> {
  await trx
    .updateTable('sessions')
    .set({ abort_requested_seq: null, updated_at: sql<Date>`now()` })
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .execute();
}

/** Child sessions (task tool) of a parent that are still working: not idle, not error. */
export async function activeChildSessions(
  db: Db,
  tenantId: string,
  parentSessionId: string,
): Promise<Array<{ id: string; status: string }>> {
  return db
    .selectFrom('sessions')
    .select(['id', 'status'])
    .where('tenant_id', '=', tenantId)
    .where('parent_session_id', '=', parentSessionId)
    .where('status', 'not in', ['idle', 'error'])
    .orderBy('created_at')
    .execute();
}
