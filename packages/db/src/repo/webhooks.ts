import { sql } from 'kysely';
import type { Db } from '../client.ts';
import { toJson } from '../tables/columns.ts';
import type {
  WebhookDeliveryRow,
  WebhookDeliveryStatus,
  WebhookSubscriptionRow,
} from '../tables/webhook.table.ts';

// Event webhooks: a tenant's subscriptions and the deliveries of its events. The secret column
// holds the sealed signing secret; callers seal and open it (it never leaves the worker opened).

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
): Promise<{ subscription: WebhookSubscription; created: boolean }> {
  const existing = await db
    .selectFrom('webhook_subscriptions')
    .select('name')
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .executeTakeFirst();
  if (!existing && sealedSecret === undefined) throw new Error('a new subscription needs a secret');
  const row = await db
    .insertInto('webhook_subscriptions')
    .values({
      tenant_id: tenantId,
      name,
      url: config.url,
      event_types: toJson(config.eventTypes),
      enabled: config.enabled,
      secret: sealedSecret ?? '',
    })
    .onConflict((oc) =>
      oc.columns(['tenant_id', 'name']).doUpdateSet((eb) => ({
        url: eb.ref('excluded.url'),
        event_types: eb.ref('excluded.event_types'),
        enabled: eb.ref('excluded.enabled'),
        ...(sealedSecret !== undefined ? { secret: eb.ref('excluded.secret') } : {}),
        updated_at: sql<Date>`now()`,
      })),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
  return { subscription: toSubscription(row), created: !existing };
}

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

/**
 * One delivery per subscription for an event; an event already recorded for a subscription (same
 * event id) is skipped. Returns the deliveries created now.
 */
export async function insertWebhookDeliveries(
  db: Db,
  rows: {
    id: string;
    tenantId: string;
    subscription: string;
    eventId: string;
    eventType: string;
    payload: Record<string, unknown>;
  }[],
): Promise<{ id: string; subscription: string }[]> {
  if (rows.length === 0) return [];
  return db
    .insertInto('webhook_deliveries')
    .values(
      rows.map((r) => ({
        id: r.id,
        tenant_id: r.tenantId,
        subscription: r.subscription,
        event_id: r.eventId,
        event_type: r.eventType,
        payload: toJson(r.payload),
      })),
    )
    .onConflict((oc) => oc.columns(['tenant_id', 'subscription', 'event_id']).doNothing())
    .returning(['id', 'subscription'])
    .execute();
}

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

/** A re-delivery: back to `pending` (attempts keep counting). */
export async function resetWebhookDelivery(db: Db, tenantId: string, id: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', updated_at: sql<Date>`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .execute();
}
