import { type Kysely, sql } from 'kysely';

// Batches (POST /v1/batches): one row per batch, one item per conversation, each item with its own
// session. Sessions get a kind: batch sessions' jobs run at a lower queue priority.

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('sessions')
    .addColumn('kind', 'text', (c) =>
      c.notNull().defaultTo('interactive').check(sql`kind in ('interactive', 'batch')`),
    )
    .execute();

  await db.schema
    .createTable('batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('agent_name', 'text', (c) => c.notNull())
    // running → completed (every item finished) or cancelled (POST …/cancel). Item states are
    // counted from batch_items, never stored here.
    .addColumn('status', 'text', (c) =>
      c.notNull().defaultTo('running').check(sql`status in ('running', 'completed', 'cancelled')`),
    )
    .addColumn('total', 'integer', (c) => c.notNull())
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('cancelled_at', 'timestamptz')
    .addColumn('completed_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('batches_tenant_idx')
    .on('batches')
    .columns(['tenant_id', 'created_at'])
    .execute();

  // One conversation: its user messages (posted one at a time, each after the session went
  // idle), how many were posted (`sent`, bumped in the transaction that appends the message),
  // and, once finished, its result row for GET …/results.
  await db.schema
    .createTable('batch_items')
    .addColumn('batch_id', 'text', (c) => c.notNull().references('batches.id'))
    .addColumn('idx', 'integer', (c) => c.notNull())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id'))
    .addColumn('messages', 'jsonb', (c) => c.notNull())
    .addColumn('sent', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('status', 'text', (c) =>
      c.notNull().defaultTo('active').check(sql`status in ('active', 'completed', 'failed', 'cancelled')`),
    )
    .addColumn('result', 'jsonb')
    .addColumn('error', 'jsonb')
    .addColumn('finished_at', 'timestamptz')
    .addPrimaryKeyConstraint('batch_items_pk', ['batch_id', 'idx'])
    .execute();
  await db.schema
    .createIndex('batch_items_session_idx')
    .on('batch_items')
    .column('session_id')
    .unique()
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('batch_items').ifExists().execute();
  await db.schema.dropTable('batches').ifExists().execute();
  await db.schema.alterTable('sessions').dropColumn('kind').execute();
}
