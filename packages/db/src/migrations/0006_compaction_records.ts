import { type Kysely, sql } from 'kysely';

// Compaction records say what happened, whole: the reason `background` (the idle-session job,
// until now recorded as `auto`), the status `noop` (a compaction that found nothing new to
// summarise, or whose result would not have shrunk the context: recorded, nothing changed), and
// `requests`, the model requests one compaction made (retries, chunks and the merge included).

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table compactions drop constraint if exists compactions_reason_check`.execute(db);
  await sql`alter table compactions add constraint compactions_reason_check
    check (reason in ('auto', 'manual', 'overflow', 'background'))`.execute(db);
  await sql`alter table compactions drop constraint if exists compactions_status_check`.execute(db);
  await sql`alter table compactions add constraint compactions_status_check
    check (status in ('running', 'completed', 'failed', 'noop'))`.execute(db);
  await db.schema.alterTable('compactions').addColumn('requests', 'integer').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('compactions').dropColumn('requests').execute();
  await sql`update compactions set status = 'completed' where status = 'noop'`.execute(db);
  await sql`update compactions set reason = 'auto' where reason = 'background'`.execute(db);
  await sql`alter table compactions drop constraint if exists compactions_status_check`.execute(db);
  await sql`alter table compactions add constraint compactions_status_check
    check (status in ('running', 'completed', 'failed'))`.execute(db);
  await sql`alter table compactions drop constraint if exists compactions_reason_check`.execute(db);
  await sql`alter table compactions add constraint compactions_reason_check
    check (reason in ('auto', 'manual', 'overflow'))`.execute(db);
}
