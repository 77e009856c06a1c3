import type { Generated, Selectable } from 'kysely';
import type { CreatedAt, Json, NullableTimestamp } from './columns.ts';

// webhook_subscriptions and webhook_deliveries: event webhooks of a tenant (migration 0009).

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
}
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>;
