import { createHash } from 'node:crypto';
import type { SessionEvent } from '@loopline/core';
import type { WebhookEventType } from './jobs.ts';
import type { Queues } from './producer.ts';

// Which session events a tenant can be told about by webhook, and what the request says. No
// message content: ids, statuses, the typed error, compaction figures. The event id is derived
// from what produced the event (session, runner fence, type, detail), so the same event produced
// again yields the same id, and every retry and re-delivery carries it (`webhook-id`). Shared by
// the worker (its fenced writes) and the gateway (status changes it makes itself: a batch cancel
// stopping queued sessions): both record the events in the outbox of their transaction
// (@loopline/db recordWebhookEvents) and add the delivery jobs after the commit (queueDeliveries).

export interface WebhookEvent {
  id: string;
  type: WebhookEventType;
  /** The request body (Standard Webhooks' recommended shape: type, timestamp, data). */
  payload: { type: WebhookEventType; timestamp: string; data: Record<string, unknown> };
}

/** A deterministic event id from what produced the event. */
export function eventId(...parts: (string | number)[]): string {
  return `evt_${createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 32)}`;
}

const payload = (type: WebhookEventType, data: Record<string, unknown>) => ({
  type,
  timestamp: new Date().toISOString(),
  data,
});

/** The webhook events among a committed write's session events (most writes have none). */
export function webhookEventsOf(
  ctx: { tenantId: string; sessionId: string; fence: number },
  events: readonly SessionEvent[],
): WebhookEvent[] {
  const out: WebhookEvent[] = [];
  const base = { tenantId: ctx.tenantId, sessionId: ctx.sessionId };
  for (const ev of events) {
    const key = [ctx.sessionId, ctx.fence, ev.type];
    if (ev.type === 'session.idle')
      out.push({ id: eventId(...key), type: 'session.idle', payload: payload('session.idle', base) });
    else if (ev.type === 'session.error')
      out.push({
        id: eventId(...key, ev.error.name),
        type: 'session.error',
        payload: payload('session.error', {
          ...base,
          error: { name: ev.error.name, message: ev.error.message },
        }),
      });
    else if (ev.type === 'session.status' && ev.status === 'waiting')
      out.push({
        id: eventId(...key, 'waiting', ev.detail ?? ''),
        type: 'session.waiting',
        payload: payload('session.waiting', { ...base, detail: ev.detail ?? null }),
      });
    else if (ev.type === 'session.compacted')
      out.push({
        id: eventId(ctx.sessionId, 'compaction', ev.compactionId),
        type: 'compaction.completed',
        payload: payload('compaction.completed', {
          ...base,
          compactionId: ev.compactionId,
          auto: ev.auto,
          rung: ev.rung,
          tokensBefore: ev.tokensBefore,
          tokensAfter: ev.tokensAfter,
        }),
      });
  }
  return out;
}

/** The `batch.completed` event of a batch. */
export function batchCompletedEvent(tenantId: string, batchId: string): WebhookEvent {
  return {
    id: eventId(batchId, 'batch.completed'),
    type: 'batch.completed',
    payload: payload('batch.completed', { tenantId, batchId }),
  };
}

/**
 * A queued session its batch's cancel stopped (the gateway writes it idle, no runner involved):
 * its own id, since the session's last runner fence may already have said `session.idle`.
 */
export function batchCancelledIdleEvent(tenantId: string, sessionId: string, batchId: string): WebhookEvent {
  return {
    id: eventId(sessionId, 'session.idle', 'batch-cancelled', batchId),
    type: 'session.idle',
    payload: payload('session.idle', { tenantId, sessionId }),
  };
}

/**
 * After the commit: one job per pending delivery under its own id (a repeat is a no-op). A failure
 * is the caller's to log, not to fail on: the reconciler re-adds missing jobs (docs/durability.md §9).
 */
export async function queueDeliveries(
  queues: Pick<Queues, 'add'>,
  deliveries: readonly { id: string; tenantId: string; jobId?: string }[],
): Promise<void> {
  for (const d of deliveries)
    await queues.add('webhook', d.jobId ?? d.id, { tenantId: d.tenantId, deliveryId: d.id });
}
