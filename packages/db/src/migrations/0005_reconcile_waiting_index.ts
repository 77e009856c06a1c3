import { type Kysely, sql } from 'kysely';

// The reconciler also looks at `waiting` sessions (a client tool's timeout job or a child's
// notification lost: repo/reconcile.ts listStalledWaitingSessions). Like 0004's, a partial index
// over the few sessions in that status, ordered by updated_at.

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('sessions_waiting_updated_at_idx')
    .on('sessions')
    .columns(['updated_at', 'id'])
    .where(sql.ref('status'), '=', 'waiting')
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('sessions_waiting_updated_at_idx').execute();
}
