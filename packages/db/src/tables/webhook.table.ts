import type { Generated, Selectable } from 'kysely';
import type { CreatedAt, Json, NullableTimestamp } from './columns.ts';

// webhook_subscriptions and webhook_deliveries: event webhooks of a tenant (migrations 0009, 0010).

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookSubscriptionTable {
  tenant_id: string;
  name: string;
  url: string;
  event_types: Json<string[]>;
  enabled: Generated<boolean>;
  secret: string;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}
export type WebhookSubscriptionRow = Selectable<WebhookSubscriptionTable>;

export interface WebhookDeliveryTable {
  id: string;
  tenant_id: string;
  subscription: string;
  event_id: string;
  event_type: string;
  payload: Json<Record<string, unknown>>;
  status: Generated<WebhookDeliveryStatus>;
  attempts: Generated<number>;
  last_status: number | null;
  last_error: string | null;
  created_at: CreatedAt;
  updated_at: CreatedAt;
  delivered_at: NullableTimestamp;
  /** The BullMQ job carrying a pending delivery; null: the delivery id (migration 0010). */
  job_id: string | null;
  /** Trace context of the write that recorded it, while tracing is on (migration 0010). */
  traceparent: string | null;
}
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>;
