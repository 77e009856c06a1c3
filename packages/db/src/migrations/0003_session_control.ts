import type { Kysely } from 'kysely';

// Session control (POST /v1/sessions/:id/abort): an abort is recorded on the session before it is
// broadcast, so a step job that was not running when the broadcast went out (queued, delayed,
// between steps, waiting on tools) still sees it and ends the turn. The value is the session's
// last_seq when the abort was asked for: user messages up to it belong to the aborted turn, a
// newer one starts a new turn. Cleared by the runner that consumes it (under its fence).

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('abort_requested_seq', 'bigint').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('abort_requested_seq').execute();
}
