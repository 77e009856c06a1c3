import { createHash } from 'node:crypto';
import type { SessionEvent } from '@loopline/core';
import type { WebhookEventType } from '@loopline/queue';

// Which session events a tenant can be told about by webhook, and what the request says. No
// message content: ids, statuses, the typed error, compaction figures. The event id is derived
// from what produced the event (session, runner fence, type, detail), so the same event produced
// again yields the same id, and every retry and re-delivery carries it (`webhook-id`).

export interface WebhookEvent {
  id: string;
  type: WebhookEventType;
  /** The request body (Standard Webhooks' recommended shape: type, timestamp, data). */
  payload: { type: WebhookEventType; timestamp: string; data: Record<string, unknown> };
}

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

export function batchCompletedEvent(tenantId: string, batchId: string): WebhookEvent {
  return {
    id: eventId(batchId, 'batch.completed'),
    type: 'batch.completed',
    payload: payload('batch.completed', { tenantId, batchId }),
  };
}
