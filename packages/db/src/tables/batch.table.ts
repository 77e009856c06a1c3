import type { ErrorData } from '@loopline/core';
import type { Generated, Insertable, Selectable } from 'kysely';
import type { CreatedAt, Json, JsonWithDefault, NullableJson, NullableTimestamp } from './columns.ts';

// batches and batch_items: many conversations submitted at once (POST /v1/batches), each item with
// its own session. Item states shown by the API (queued/running) come from the session's status.

export type BatchStatus = 'running' | 'completed' | 'cancelled';
export type BatchItemStatus = 'active' | 'completed' | 'failed' | 'cancelled';

export interface BatchTable {
  id: string;
  tenant_id: string;
  agent_name: string;
  status: Generated<BatchStatus>;
  total: number;
  metadata: JsonWithDefault<Record<string, unknown>>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
  cancelled_at: NullableTimestamp;
  completed_at: NullableTimestamp;
  /** Trace context of the request that created it, while tracing is on (migration 0010). */
  traceparent: string | null;
}
export type BatchRow = Selectable<BatchTable>;
export type NewBatchRow = Insertable<BatchTable>;

/** The user messages of one conversation, posted in order. */
export type BatchMessage = { text: string };

/** What GET /v1/batches/:id/results shows for a finished item. */
export interface BatchItemResult {
  output: string | null;
  usage: {
    input: number;
    output: number;
    reasoning: number;
    cacheRead: number;
    cacheWrite: number;
    total: number;
  };
  modelCalls: number;
  compactions: number;
}

export interface BatchItemTable {
  batch_id: string;
  idx: number;
  tenant_id: string;
  session_id: string;
  messages: Json<BatchMessage[]>;
  sent: Generated<number>;
  status: Generated<BatchItemStatus>;
  result: NullableJson<BatchItemResult>;
  error: NullableJson<ErrorData>;
  finished_at: NullableTimestamp;
}
export type BatchItemRow = Selectable<BatchItemTable>;
export type NewBatchItemRow = Insertable<BatchItemTable>;
