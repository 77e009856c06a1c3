import { type Kysely, sql } from 'kysely';

// Event webhooks as an outbox: a delivery row is written, `pending`, in the transaction of the
// events that cause it; its BullMQ job is added after the commit. `job_id` names the job that
// carries a pending delivery (the delivery id, or a re-delivery's own id), so the reconciler can
// ask Redis whether it exists and re-add it when a crash or a Redis loss dropped it. The partial
// index finds pending deliveries without reading the delivered history.
//
// `traceparent` (sessions, batches, deliveries): the W3C trace context of what last wrote the
// row, kept only while tracing is on, so that what the reconciler re-adds after a loss continues
// the trace it belongs to instead of starting an unrelated one.

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_deliveries').addColumn('job_id', 'text').execute();
  await db.schema.alterTable('webhook_deliveries').addColumn('traceparent', 'text').execute();
  await db.schema.alterTable('sessions').addColumn('traceparent', 'text').execute();
  await db.schema.alterTable('batches').addColumn('traceparent', 'text').execute();
  await db.schema
    .createIndex('webhook_deliveries_pending_idx')
    .on('webhook_deliveries')
    .column('updated_at')
    .where(sql.ref('status'), '=', 'pending')
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations never depend on the current table types
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_pending_idx').ifExists().execute();
  await db.schema.alterTable('batches').dropColumn('traceparent').execute();
  await db.schema.alterTable('sessions').dropColumn('traceparent').execute();
  await db.schema.alterTable('webhook_deliveries').dropColumn('traceparent').execute();
  await db.schema.alterTable('webhook_deliveries').dropColumn('job_id').execute();
}
