import { type Kysely, sql } from 'kysely';

// Event webhooks: a tenant's subscriptions (PUT /v1/webhooks/:name: a URL, the event types it
// wants, a signing secret) and one delivery row per event and subscription. The event id is
// stable across retries and re-deliveries (the Standard Webhooks `webhook-id`), and unique per
// subscription, so an event produced twice (a step run again after a crash) is delivered once.

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_subscriptions')
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('event_types', 'jsonb', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    // The signing secret, sealed with the deployment's secrets key (AES-256-GCM).
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('webhook_subscriptions_pk', ['tenant_id', 'name'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id'))
    .addColumn('subscription', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    // The request body as sent (the event), so a re-delivery sends the same bytes' content.
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c.notNull().defaultTo('pending').check(sql`status in ('pending', 'delivered', 'failed')`),
    )
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('delivered_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_event_idx')
    .on('webhook_deliveries')
    .columns(['tenant_id', 'subscription', 'event_id'])
    .unique()
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_list_idx')
    .on('webhook_deliveries')
    .columns(['tenant_id', 'subscription', 'created_at'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_deliveries').ifExists().execute();
  await db.schema.dropTable('webhook_subscriptions').ifExists().execute();
}
