import { type RawBuilder, sql } from 'kysely';
import type { Db, Trx } from '../client.ts';
import { toJson } from '../tables/columns.ts';
import type {
  WebhookDeliveryRow,
  WebhookDeliveryStatus,
  WebhookSubscriptionRow,
} from '../tables/webhook.table.ts';
import type { FencedCte } from './fenced-statement.ts';

// Event webhooks: a tenant's subscriptions (the signing secret stored sealed; only the worker opens
// it) and the deliveries of its events, an outbox recorded with the write the event describes and
// healed by the reconciler (docs/durability.md §9).

export interface WebhookSubscription {
  name: string;
  url: string;
  eventTypes: string[];
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface WebhookDelivery {
  id: string;
  subscription: string;
  eventId: string;
  eventType: string;
  payload: Record<string, unknown>;
  status: WebhookDeliveryStatus;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
  deliveredAt: Date | null;
}

const toSubscription = (r: WebhookSubscriptionRow): WebhookSubscription => ({
  name: r.name,
  url: r.url,
  eventTypes: r.event_types,
  enabled: r.enabled,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toDelivery = (r: WebhookDeliveryRow): WebhookDelivery => ({
  id: r.id,
  subscription: r.subscription,
  eventId: r.event_id,
  eventType: r.event_type,
  payload: r.payload,
  status: r.status,
  attempts: r.attempts,
  lastStatus: r.last_status,
  lastError: r.last_error,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  deliveredAt: r.delivered_at,
});

/**
 * Creates or updates a subscription. `sealedSecret` is stored on creation (and when given for an
 * existing one: a rotation); an update without it keeps the stored secret.
 */
export async function putWebhookSubscription(
  db: Db,
  tenantId: string,
  name: string,
  config: { url: string; eventTypes: string[]; enabled: boolean },
  sealedSecret: string | undefined,
): Promise<{ subscription: WebhookSubscription; created: boolean } | undefined> {
  // Without a new secret only an existing row is updated (one statement): a subscription deleted
  // meanwhile gives undefined, never a row without a secret.
  if (sealedSecret === undefined) {
    const row = await db
      .updateTable('webhook_subscriptions')
      .set({
        url: config.url,
        event_types: toJson(config.eventTypes),
        enabled: config.enabled,
        updated_at: sql<Date>`now()`,
      })
      .where('tenant_id', '=', tenantId)
      .where('name', '=', name)
      .returningAll()
      .executeTakeFirst();
    return row ? { subscription: toSubscription(row), created: false } : undefined;
  }
  const row = await db
    .insertInto('webhook_subscriptions')
    .values({
      tenant_id: tenantId,
      name,
      url: config.url,
      event_types: toJson(config.eventTypes),
      enabled: config.enabled,
      secret: sealedSecret,
    })
    .onConflict((oc) =>
      oc.columns(['tenant_id', 'name']).doUpdateSet((eb) => ({
        url: eb.ref('excluded.url'),
        event_types: eb.ref('excluded.event_types'),
        enabled: eb.ref('excluded.enabled'),
        secret: eb.ref('excluded.secret'),
        updated_at: sql<Date>`now()`,
      })),
    )
    .returningAll()
    // xmax is 0 on a row this statement inserted, set on one it updated (PostgreSQL's upsert idiom).
    .returning(sql<boolean>`xmax = 0`.as('inserted'))
    .executeTakeFirstOrThrow();
  return { subscription: toSubscription(row), created: row.inserted };
}

/** The tenant's subscription with its sealed secret, or undefined. */
export async function getWebhookSubscription(
  db: Db,
  tenantId: string,
  name: string,
): Promise<(WebhookSubscription & { sealedSecret: string }) | undefined> {
  const row = await db
    .selectFrom('webhook_subscriptions')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .executeTakeFirst();
  return row ? { ...toSubscription(row), sealedSecret: row.secret } : undefined;
}

/** The tenant's subscriptions (without secrets). */
export async function listWebhookSubscriptions(db: Db, tenantId: string): Promise<WebhookSubscription[]> {
  const rows = await db
    .selectFrom('webhook_subscriptions')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .orderBy('name')
    .execute();
  return rows.map(toSubscription);
}

/** Deletes a subscription (its delivery history stays listed until the tenant is gone). */
export async function deleteWebhookSubscription(db: Db, tenantId: string, name: string): Promise<boolean> {
  const result = await db
    .deleteFrom('webhook_subscriptions')
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** An event a tenant's subscriptions may want; the request body is `{ id, ...payload }`. */
export interface WebhookOutboxEvent {
  id: string;
  type: string;
  payload: Record<string, unknown>;
}

/** A pending delivery and the BullMQ job that carries it. */
export interface PendingDelivery {
  id: string;
  tenantId: string;
  jobId: string;
  /** The trace of the write that recorded it (tracing on): a re-added job continues it. */
  traceparent?: string;
}

const toPending = (r: {
  id: string;
  tenant_id: string;
  job_id: string | null;
  traceparent: string | null;
}) => ({
  id: r.id,
  tenantId: r.tenant_id,
  jobId: r.job_id ?? r.id,
  ...(r.traceparent ? { traceparent: r.traceparent } : {}),
});

/**
 * The outbox insert: one `pending` delivery per (enabled subscription wanting the event type,
 * event), chosen in the statement itself; an event already recorded for a subscription (same
 * event id) is skipped. `from` joins the statement to a fenced statement's `f` (no rows: nothing).
 */
function outboxInsert(
  tenantId: string,
  events: readonly WebhookOutboxEvent[],
  from: RawBuilder<unknown>,
  traceparent: string | undefined,
): RawBuilder<{ id: string }> {
  const values = sql.join(
    events.map(
      (e, i) =>
        sql`(${i}::int, ${e.id}::text, ${e.type}::text, ${toJson({ id: e.id, ...e.payload })}::jsonb)`,
    ),
  );
  return sql<{ id: string }>`insert into webhook_deliveries
      (id, tenant_id, subscription, event_id, event_type, payload, traceparent)
    select 'whd_' || left(replace(gen_random_uuid()::text, '-', ''), 24), s.tenant_id, s.name,
      v.event_id, v.event_type, v.payload, ${traceparent ?? null}::text
    from ${from} webhook_subscriptions s
      cross join (values ${values}) as v(ord, event_id, event_type, payload)
    where s.tenant_id = ${tenantId} and s.enabled and s.event_types @> jsonb_build_array(v.event_type)
    order by v.ord, s.name
    on conflict (tenant_id, subscription, event_id) do nothing
    returning id`;
}

/**
 * Records events in the outbox, inside the caller's transaction (the one that writes what the
 * events say). Returns the deliveries created now; their jobs are added after the commit.
 */
export async function recordWebhookEvents(
  db: Db | Trx,
  tenantId: string,
  events: readonly WebhookOutboxEvent[],
  traceparent?: string,
): Promise<string[]> {
  if (events.length === 0) return [];
  const { rows } = await outboxInsert(tenantId, events, sql``, traceparent).execute(db);
  return rows.map((r) => r.id);
}

/** The outbox insert as a CTE of a fenced statement (fenced-statement.ts): nothing when stale. */
export function webhookEventsCte(
  tenantId: string,
  events: readonly WebhookOutboxEvent[],
  traceparent?: string,
): FencedCte {
  return {
    name: 'ins_webhook_deliveries',
    query: outboxInsert(tenantId, events, sql`f cross join`, traceparent),
  };
}

/** The pending deliveries of these events (after a fenced statement recorded them). */
export async function pendingDeliveriesOf(
  db: Db,
  tenantId: string,
  eventIds: readonly string[],
): Promise<PendingDelivery[]> {
  if (eventIds.length === 0) return [];
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'tenant_id', 'job_id', 'traceparent'])
    .where('tenant_id', '=', tenantId)
    .where('event_id', 'in', [...eventIds])
    .where('status', '=', 'pending')
    .execute();
  return rows.map(toPending);
}

/**
 * Pending deliveries not touched for `olderThanMs` (every attempt and re-delivery bumps
 * updated_at), oldest first: the reconciler checks that their job still exists.
 */
export async function listStalePendingDeliveries(
  db: Db,
  opts: { olderThanMs: number; limit?: number },
): Promise<PendingDelivery[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'tenant_id', 'job_id', 'traceparent'])
    .where('status', '=', 'pending')
    .where('updated_at', '<', sql<Date>`now() - make_interval(secs => ${opts.olderThanMs / 1000})`)
    .orderBy('updated_at')
    .limit(opts.limit ?? 500)
    .execute();
  return rows.map(toPending);
}

/** Names the job that now carries a pending delivery (a re-delivery, a reconciler heal). */
export async function setWebhookDeliveryJob(
  db: Db,
  tenantId: string,
  id: string,
  jobId: string,
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ job_id: jobId, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute();
}

/** A delivery of the tenant, or undefined. */
export async function getWebhookDelivery(
  db: Db,
  tenantId: string,
  id: string,
): Promise<WebhookDelivery | undefined> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row ? toDelivery(row) : undefined;
}

/** Newest first. */
export async function listWebhookDeliveries(
  db: Db,
  tenantId: string,
  subscription: string,
  limit: number,
): Promise<WebhookDelivery[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('subscription', '=', subscription)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map(toDelivery);
}

/** Records one attempt's outcome: `delivered`, or still `pending` / finally `failed`. */
export async function recordWebhookAttempt(
  db: Db,
  tenantId: string,
  id: string,
  outcome: { status: WebhookDeliveryStatus; lastStatus: number | null; lastError: string | null },
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      status: outcome.status,
      attempts: eb('attempts', '+', 1),
      last_status: outcome.lastStatus,
      last_error: outcome.lastError,
      updated_at: sql<Date>`now()`,
      ...(outcome.status === 'delivered' ? { delivered_at: sql<Date>`now()` } : {}),
    }))
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute();
}

/** A re-delivery under its own job: back to `pending` (attempts keep counting). */
export async function resetWebhookDelivery(
  db: Db,
  tenantId: string,
  id: string,
  jobId: string,
  opts: { unlessPending?: boolean } = {},
): Promise<boolean> {
  let query = db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', job_id: jobId, updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id);
  // A redelivery asked for by a tenant: never a second job beside one still delivering it.
  if (opts.unlessPending) query = query.where('status', '!=', 'pending');
  const result = await query.executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
