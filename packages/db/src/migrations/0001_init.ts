import { type Kysely, sql } from 'kysely';

// The whole schema. Every table carries tenant_id and every query filters on it.
// History (messages, parts) is append-only: rows are never deleted; parts only move forward.
// Migrations are numbered and append-only; they are typed Kysely<any> so they never depend on
// the current table types.

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('tenants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('settings', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  // Only the sha256 of a key is stored; `prefix` (its first 8 characters) is for display.
  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('api_keys_tenant_idx').on('api_keys').column('tenant_id').execute();

  for (const table of ['agents', 'tools']) {
    await db.schema
      .createTable(table)
      .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('config', 'jsonb', (c) => c.notNull())
      // Bumped by every update that changes the config.
      .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
      .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
      .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
      .addPrimaryKeyConstraint(`${table}_pk`, ['tenant_id', 'name'])
      .execute();
  }

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('agent_name', 'text', (c) => c.notNull())
    // The agent's config resolved at creation plus per-session overrides: a session never
    // changes behaviour because its agent was edited mid-conversation.
    .addColumn('agent', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('idle'))
    .addColumn('status_detail', 'text')
    // Fencing token: bumped by each new lock holder; every write checks it.
    .addColumn('fence', 'bigint', (c) => c.notNull().defaultTo(0))
    // The last message seq handed out. Allocating a seq updates this row, so seq order is commit
    // order within a session (the row lock is held until commit): a reader never sees seq N+1
    // committed and seq N appear later.
    .addColumn('last_seq', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('step_count', 'integer', (c) => c.notNull().defaultTo(0))
    // seq of the compaction user message of the newest completed boundary (filterCompacted start).
    .addColumn('boundary_seq', 'bigint')
    .addColumn('last_usage', 'jsonb')
    .addColumn('token_ratio', 'double precision')
    .addColumn('compaction_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_compaction_at', 'timestamptz')
    .addColumn('error', 'jsonb')
    .addColumn('title', 'text')
    .addColumn('parent_session_id', 'text', (c) => c.references('sessions.id'))
    .addColumn('metadata', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('sessions_tenant_idx')
    .on('sessions')
    .columns(['tenant_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('sessions_parent_idx')
    .on('sessions')
    .column('parent_session_id')
    .where('parent_session_id', 'is not', null)
    .execute();

  // seq comes from sessions.last_seq (see above), never from a process clock.
  await db.schema
    .createTable('messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id'))
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('user', 'assistant')`))
    .addColumn('info', 'jsonb', (c) => c.notNull())
    .addColumn('reverted', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('messages_session_seq_idx')
    .on('messages')
    .columns(['session_id', 'seq'])
    .unique()
    .execute();

  // Parts are ordered within their message by a global identity (one writer per message) and
  // always read by message (parts_message_idx).
  await db.schema
    .createTable('parts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull().references('messages.id'))
    .addColumn('seq', 'bigint', (c) => c.notNull().generatedAlwaysAsIdentity())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addColumn('tokens', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('parts_message_idx').on('parts').columns(['message_id', 'seq']).execute();

  // Full text of tool outputs cut at ingest, for read_output; kept until expires_at.
  await db.schema
    .createTable('tool_outputs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('part_id', 'text', (c) => c.notNull())
    .addColumn('call_id', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('lines', 'integer', (c) => c.notNull())
    .addColumn('bytes', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('tool_outputs_session_idx')
    .on('tool_outputs')
    .columns(['session_id'])
    .execute();
  await db.schema.createIndex('tool_outputs_expires_idx').on('tool_outputs').column('expires_at').execute();

  // The step ledger: one row per job attempt of a loop step, compaction or prune pass.
  await db.schema
    .createTable('steps')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('step', 'integer', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('step', 'compaction', 'prune')`))
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('fence', 'bigint', (c) => c.notNull())
    // The assistant message the step wrote, when it called the model.
    .addColumn('message_id', 'text')
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('finished_at', 'timestamptz')
    .addColumn('request_id', 'text')
    .addColumn('response_id', 'text')
    .addColumn('usage', 'jsonb')
    .addColumn('outcome', 'text')
    .addColumn('error', 'jsonb')
    .execute();
  await db.schema.createIndex('steps_session_idx').on('steps').columns(['session_id', 'step']).execute();

  // One row per compaction run (a retried job adds a row; earlier running rows of the same
  // compaction point are closed as failed). docs/context.md §5.7.
  await db.schema
    .createTable('compactions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    // The compaction user message and its compaction part (the compaction point).
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('part_id', 'text', (c) => c.notNull())
    .addColumn('summary_message_id', 'text')
    .addColumn('reason', 'text', (c) => c.notNull().check(sql`reason in ('auto', 'manual', 'overflow')`))
    .addColumn('rung', 'text')
    .addColumn('status', 'text', (c) =>
      c.notNull().defaultTo('running').check(sql`status in ('running', 'completed', 'failed')`),
    )
    .addColumn('tokens_before', 'integer')
    .addColumn('tokens_after', 'integer')
    // Messages summarised (the head) and the first message kept verbatim (the tail).
    .addColumn('head_messages', 'integer')
    .addColumn('tail_start_id', 'text')
    .addColumn('model', 'text')
    .addColumn('job_id', 'text')
    .addColumn('attempt', 'integer')
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('finished_at', 'timestamptz')
    .addColumn('duration_ms', 'integer')
    .addColumn('error', 'jsonb')
    .execute();
  await db.schema
    .createIndex('compactions_session_idx')
    .on('compactions')
    .columns(['session_id', 'started_at'])
    .execute();
  await db.schema.createIndex('compactions_message_idx').on('compactions').column('message_id').execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('response', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('idempotency_pk', ['tenant_id', 'session_id', 'key'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  for (const t of [
    'idempotency_keys',
    'compactions',
    'steps',
    'tool_outputs',
    'parts',
    'messages',
    'sessions',
    'tools',
    'agents',
    'api_keys',
    'tenants',
  ]) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
