import { type Kysely, sql } from 'kysely';

// The reconciler (apps/worker/src/reconcile.ts, repo/reconcile.ts) looks every period for
// sessions in an active status whose row has not changed for a while, stalest first. Without an
// index that is a scan of every session ever created; this partial index holds only the sessions
// that are queued, running or compacting — a small set at any moment — ordered by updated_at.

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('sessions_active_updated_at_idx')
    .on('sessions')
    .columns(['updated_at', 'id'])
    .where(sql.ref('status'), 'in', ['queued', 'running', 'compacting'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('sessions_active_updated_at_idx').execute();
}
