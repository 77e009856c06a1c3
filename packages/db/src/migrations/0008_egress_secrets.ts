import { type Kysely, sql } from 'kysely';

// Secrets kept beside, never inside, the configurations GET returns (docs/security.md):
// - agents.credential: the tenant's own model API key for an agent with its own `baseURL`,
//   sealed with AES-256-GCM (packages/egress secrets.ts). Existing agents with a `baseURL` have
//   none: until the tenant PUTs the agent again with its `apiKey`, their sessions stop with a
//   ConfigError instead of sending the deployment's key to that URL.
// - tools.signing_secret: the webhook signing secret, sealed the same way; an existing webhook
//   tool gets one (shown once) at its next PUT.
// - attachments: the bytes the worker fetched for a message's file part, so a URL is fetched
//   once (through the egress gate) and the same bytes are sent at every step.

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('agents').addColumn('credential', 'text').execute();
  await db.schema.alterTable('tools').addColumn('signing_secret', 'text').execute();
  await db.schema
    .createTable('attachments')
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('part_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('mime', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('data', 'bytea', (c) => c.notNull())
    .addColumn('fetched_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('attachments_pk', ['tenant_id', 'part_id'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('attachments').execute();
  await db.schema.alterTable('tools').dropColumn('signing_secret').execute();
  await db.schema.alterTable('agents').dropColumn('credential').execute();
}
