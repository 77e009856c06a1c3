import { randomBytes } from 'node:crypto';
import { insertWebhookDeliveries, listWebhookSubscriptions, type WebhookSubscription } from '@loopline/db';
import type { WorkerDeps } from '../deps.ts';
import type { WebhookEvent } from './events.ts';

// Turns a tenant's events into deliveries: a row per (subscription, event) — an event already
// recorded for a subscription is skipped (same event id) — and a job for each new row. Never
// fails the caller: a webhook problem must not stop the loop; it is logged and left at that.

/**
 * A tenant's enabled subscriptions: one indexed read per event worth telling (a turn's end, an
 * error, a wait, a compaction: never per step), made after the events were published, so a new
 * or changed subscription applies to the very next event.
 */
async function subscriptionsOf(deps: WorkerDeps, tenantId: string): Promise<WebhookSubscription[]> {
  return (await listWebhookSubscriptions(deps.db, tenantId)).filter((s) => s.enabled);
}

export const newDeliveryId = (): string => `whd_${randomBytes(12).toString('hex')}`;

export async function enqueueWebhookEvents(
  deps: WorkerDeps,
  tenantId: string,
  events: readonly WebhookEvent[],
): Promise<void> {
  if (events.length === 0) return;
  try {
    const subs = await subscriptionsOf(deps, tenantId);
    if (subs.length === 0) return;
    const rows = events.flatMap((ev) =>
      subs
        .filter((s) => s.eventTypes.includes(ev.type))
        .map((s) => ({
          id: newDeliveryId(),
          tenantId,
          subscription: s.name,
          eventId: ev.id,
          eventType: ev.type,
          payload: { id: ev.id, ...ev.payload },
        })),
    );
    const created = await insertWebhookDeliveries(deps.db, rows);
    for (const d of created) await deps.queues.add('webhook', d.id, { tenantId, deliveryId: d.id });
  } catch (err) {
    deps.logger.warn({ err, tenantId, events: events.map((e) => e.type) }, 'webhook events not enqueued');
  }
}
