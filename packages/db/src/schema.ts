import type { AgentTable, AttachmentTable, ToolTable } from './tables/agent.table.ts';
import type { BatchItemTable, BatchTable } from './tables/batch.table.ts';
import type { CompactionTable } from './tables/compaction.table.ts';
import type { IdempotencyKeyTable } from './tables/idempotency.table.ts';
import type { MessageTable } from './tables/message.table.ts';
import type { PartTable } from './tables/part.table.ts';
import type { SessionTable } from './tables/session.table.ts';
import type { StepTable } from './tables/step.table.ts';
import type { ApiKeyTable, TenantTable } from './tables/tenant.table.ts';
import type { ToolOutputTable } from './tables/tool-output.table.ts';
import type { WebhookDeliveryTable, WebhookSubscriptionTable } from './tables/webhook.table.ts';

// The database as kysely sees it: table name → row interface. Must match migrations/.

export interface DB {
  tenants: TenantTable;
  api_keys: ApiKeyTable;
  agents: AgentTable;
  tools: ToolTable;
  attachments: AttachmentTable;
  sessions: SessionTable;
  messages: MessageTable;
  parts: PartTable;
  tool_outputs: ToolOutputTable;
  steps: StepTable;
  compactions: CompactionTable;
  idempotency_keys: IdempotencyKeyTable;
  batches: BatchTable;
  batch_items: BatchItemTable;
  webhook_subscriptions: WebhookSubscriptionTable;
  webhook_deliveries: WebhookDeliveryTable;
}
