import { type Kysely, sql } from 'kysely';

// History revisions for the worker's session cache (apps/worker/src/session-cache.ts): every
// insert or update of a message or part row stamps it with `rev`, a number from one sequence
// taken while the transaction holds a per-session advisory lock until commit. So within a session
// rev order is commit order, and a reader that has seen every row up to rev R can fetch exactly
// what changed since with `rev > R` (appends, tool results, prune marks, revert marks, summaries):
// the delta a cached history needs, whatever wrote it. Done by the database, not by each write
// path, so no writer can forget it. docs/durability.md §11 has the argument.

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  // CACHE 1 (the default) is required: values must be handed out in time order across backends.
  await sql`create sequence history_rev_seq as bigint cache 1`.execute(db);
  await db.schema
    .alterTable('messages')
    .addColumn('rev', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('parts')
    .addColumn('rev', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  // The advisory lock (released at commit) serialises the rev stamping of one session: a
  // transaction that took rev r has committed before another one of the same session takes a
  // larger rev. Writers already hold the session row lock at this point (every message and part
  // write starts with an UPDATE of its session row), so this lock adds no wait of its own; it
  // makes the rule hold even for a writer that did not. A row never moves to another session (nor
  // a part to another message): the cache merges a change by id within its message, and the
  // product never moves rows, so such an update is refused instead of trusted.
  for (const [table, moved] of [
    ['messages', 'new.session_id <> old.session_id'],
    ['parts', 'new.session_id <> old.session_id or new.message_id <> old.message_id'],
  ] as const) {
    await sql`
      create function ${sql.raw(`stamp_${table}_rev`)}() returns trigger language plpgsql as $$
      begin
        if tg_op = 'UPDATE' and (${sql.raw(moved)}) then
          raise exception '${sql.raw(table)} rows never move to another session or message';
        end if;
        perform pg_advisory_xact_lock(hashtextextended(new.session_id, 7406110010));
        new.rev := nextval('history_rev_seq');
        return new;
      end $$`.execute(db);
    await sql`create trigger ${sql.raw(`${table}_history_rev`)} before insert or update on ${sql.raw(table)}
      for each row execute function ${sql.raw(`stamp_${table}_rev`)}()`.execute(db);
  }
  await db.schema
    .createIndex('messages_session_rev_idx')
    .on('messages')
    .columns(['session_id', 'rev'])
    .execute();
  await db.schema.createIndex('parts_session_rev_idx').on('parts').columns(['session_id', 'rev']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger parts_history_rev on parts`.execute(db);
  await sql`drop trigger messages_history_rev on messages`.execute(db);
  await sql`drop function stamp_parts_rev()`.execute(db);
  await sql`drop function stamp_messages_rev()`.execute(db);
  await db.schema.alterTable('parts').dropColumn('rev').execute();
  await db.schema.alterTable('messages').dropColumn('rev').execute();
  await sql`drop sequence history_rev_seq`.execute(db);
}
