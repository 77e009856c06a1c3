import { sql } from 'kysely';
import type { Db, Trx } from './client.ts';
import { NotFoundError, StaleFenceError } from './errors.ts';

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

/** Runs fn in one transaction that first checks the fence; a stale fence throws StaleFenceError. */
export async function withFence<T>(db: Db, f: Fence, fn: (trx: Trx) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('sessions')
      .set({ updated_at: sql<Date>`now()` })
      .where('id', '=', f.sessionId)
      .where('tenant_id', '=', f.tenantId)
      .where('fence', '=', f.fence)
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) {
      const row = await trx
        .selectFrom('sessions')
        .select('fence')
        .where('id', '=', f.sessionId)
        .where('tenant_id', '=', f.tenantId)
        .executeTakeFirst();
      throw new StaleFenceError({ sessionId: f.sessionId, fence: f.fence, currentFence: row?.fence ?? null });
    }
    return fn(trx);
  });
}

/** Takes the next fencing token for a session (called by the holder of the Redis lock). */
export async function acquireFence(db: Db, tenantId: string, sessionId: string): Promise<number> {
  const row = await db
    .updateTable('sessions')
    .set((eb) => ({ fence: eb('fence', '+', 1), updated_at: sql<Date>`now()` }))
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .returning('fence')
    .executeTakeFirst();
  if (!row) throw new NotFoundError('session', sessionId);
  return row.fence;
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
