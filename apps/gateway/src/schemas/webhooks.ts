import { WEBHOOK_EVENT_TYPES } from '@loopline/queue';
import { z } from 'zod';

// Request and response schemas of event webhooks (PUT /v1/webhooks/:name and the deliveries).
// (routes/webhooks.ts). No .transform() in response schemas (shared.ts says why).

const Timestamp = z.string().describe('ISO 8601 timestamp');

export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES).describe('An event a subscription can receive');

export const PutWebhookBody = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .describe('Where the events are POSTed (http or https; the same egress rules as webhook tools)'),
    events: z
      .array(WebhookEventType)
      .min(1, 'subscribe to at least one event type')
      .refine((a) => new Set(a).size === a.length, 'event types must not repeat')
      .describe('The event types to deliver'),
    enabled: z.boolean().default(true).describe('A disabled subscription gets no new deliveries'),
    rotateSecret: z
      .boolean()
      .default(false)
      .describe('Replace the signing secret of an existing subscription (returned once, like the first)'),
  })
  .describe('A webhook subscription')
  .meta({
    example: { url: 'https://hooks.example.com/loopline', events: ['session.idle', 'session.error'] },
  });

const EXAMPLE_SUBSCRIPTION = {
  name: 'ops',
  url: 'https://hooks.example.com/loopline',
  events: ['session.idle', 'session.error'],
  enabled: true,
  createdAt: '2026-05-01T09:00:00.000Z',
  updatedAt: '2026-05-01T09:00:00.000Z',
};

export const WebhookView = z
  .object({
    name: z.string(),
    url: z.string(),
    events: z.array(WebhookEventType),
    enabled: z.boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .describe('A webhook subscription (its secret is never shown again)')
  .meta({ example: EXAMPLE_SUBSCRIPTION });

export const PutWebhookView = WebhookView.extend({
  secret: z
    .string()
    .optional()
    .describe(
      'The Standard Webhooks signing secret (`whsec_…`), present only when it was just created or rotated',
    ),
})
  .describe('The saved subscription; its signing secret when it was just created or rotated')
  .meta({ example: { ...EXAMPLE_SUBSCRIPTION, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } });

export const WebhookList = z
  .object({ webhooks: z.array(WebhookView) })
  .describe('Every webhook subscription of the tenant')
  .meta({ example: { webhooks: [EXAMPLE_SUBSCRIPTION] } });

const EXAMPLE_DELIVERY = {
  id: 'whd_5f0c2a9e1b7d4c3a8e6f0b1d',
  eventId: 'evt_2b8f0d6c4a1e9f7b3c5d0a2e4f6b8d1c',
  eventType: 'session.idle',
  status: 'delivered',
  attempts: 1,
  lastStatus: 200,
  lastError: null,
  payload: {
    id: 'evt_2b8f0d6c4a1e9f7b3c5d0a2e4f6b8d1c',
    type: 'session.idle',
    timestamp: '2026-05-01T09:00:01.000Z',
    data: { tenantId: 'ten_0lq7w2k3a9x1f3bq8vwz2c', sessionId: 'ses_0lq7w2k3a9x1f3bq8vwz2c' },
  },
  createdAt: '2026-05-01T09:00:01.000Z',
  deliveredAt: '2026-05-01T09:00:01.200Z',
};

export const WebhookDeliveryView = z
  .object({
    id: z.string(),
    eventId: z.string().describe('Stable across retries and re-deliveries (the `webhook-id` header)'),
    eventType: WebhookEventType,
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int().describe('HTTP attempts so far'),
    lastStatus: z.number().int().nullable().describe('HTTP status of the last attempt'),
    lastError: z.string().nullable().describe('Why the last attempt failed'),
    payload: z.record(z.string(), z.unknown()).describe('The request body'),
    createdAt: Timestamp,
    deliveredAt: Timestamp.nullable(),
  })
  .describe('One event sent (or being sent) to one subscription')
  .meta({ example: EXAMPLE_DELIVERY });

export const WebhookDeliveryList = z
  .object({ deliveries: z.array(WebhookDeliveryView) })
  .describe('Deliveries of the subscription, newest first')
  .meta({ example: { deliveries: [EXAMPLE_DELIVERY] } });

export const DeliveriesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50).describe('How many (newest first), 1–500'),
});

export const DeliveryParams = z.object({
  name: z.string().describe('Subscription name'),
  id: z.string().describe('Delivery id (whd_…)'),
});

export const RedeliverView = z
  .object({ delivery: WebhookDeliveryView })
  .describe('The delivery, pending again')
  .meta({ example: { delivery: { ...EXAMPLE_DELIVERY, status: 'pending', deliveredAt: null } } });
