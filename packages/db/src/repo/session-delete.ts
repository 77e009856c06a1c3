import type { Db, Trx } from '../client.ts';

// DELETE /v1/sessions/:id: removes the session, its child sessions and everything stored for them
// (SESSION_DATA_TABLES) in one transaction. History is otherwise append-only: the one deleting path.

/**
 * Every table that holds a session's data by `session_id`, in an order that respects their
 * foreign keys (parts before messages). A new table keyed by session belongs here.
 */
const SESSION_DATA_TABLES = [
  'idempotency_keys',
  'tool_outputs',
  'attachments',
  'parts',
  'compactions',
  'steps',
  'messages',
  'batch_items',
] as const;

export type DeleteSessionOutcome =
  | { deleted: true; sessionIds: string[] }
  | { deleted: false; reason: 'not_found' }
  | { deleted: false; reason: 'busy'; busy: Array<{ id: string; status: string }> }
  | { deleted: false; reason: 'batch_running'; batchId: string };

/** The session and all its descendants (children first in the returned order's reverse). */
async function subtree(trx: Trx, tenantId: string, sessionId: string): Promise<string[]> {
  const ids = [sessionId];
  for (let i = 0; i < ids.length; i++) {
    const children = await trx
      .selectFrom('sessions')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .where('parent_session_id', '=', ids[i]!)
      .execute();
    for (const c of children) if (!ids.includes(c.id)) ids.push(c.id);
  }
  return ids;
}

/**
 * Deletes an idle (or failed) session and its subtree. Refused — nothing written — when any of
 * them is still working, or belongs to a batch that is still running. `heldByRunner` is asked, under
 * the row locks, which of the sessions a runner still holds (the gateway checks their Redis locks).
 */
export async function deleteSessionTree(
  db: Db,
  tenantId: string,
  sessionId: string,
  heldByRunner: (ids: string[]) => Promise<string[]>,
): Promise<DeleteSessionOutcome> {
  return db.transaction().execute(async (trx) => {
    const ids = await subtree(trx, tenantId, sessionId);
    const rows = await trx
      .selectFrom('sessions')
      .select(['id', 'status'])
      .where('tenant_id', '=', tenantId)
      .where('id', 'in', ids)
      .orderBy('id')
      .forUpdate()
      .execute();
    if (!rows.some((r) => r.id === sessionId)) return { deleted: false, reason: 'not_found' };
    const busy = rows.filter((r) => r.status !== 'idle' && r.status !== 'error');
    const locked = await heldByRunner(ids);
    for (const id of locked)
      if (!busy.some((b) => b.id === id)) busy.push({ id, status: rows.find((r) => r.id === id)!.status });
    if (busy.length > 0) return { deleted: false, reason: 'busy', busy };
    const running = await trx
      .selectFrom('batch_items')
      .innerJoin('batches', 'batches.id', 'batch_items.batch_id')
      .select('batches.id')
      .where('batch_items.tenant_id', '=', tenantId)
      .where('batch_items.session_id', 'in', ids)
      .where('batches.status', '=', 'running')
      .executeTakeFirst();
    if (running) return { deleted: false, reason: 'batch_running', batchId: running.id };

    for (const table of SESSION_DATA_TABLES)
      await trx.deleteFrom(table).where('tenant_id', '=', tenantId).where('session_id', 'in', ids).execute();
    // Children before parents (parent_session_id references sessions.id).
    for (const id of [...ids].reverse())
      await trx.deleteFrom('sessions').where('tenant_id', '=', tenantId).where('id', '=', id).execute();
    return { deleted: true, sessionIds: ids };
  });
}
