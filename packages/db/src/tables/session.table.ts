import type { AgentConfig, ErrorData, SessionKind, SessionStatus, Usage } from '@loopline/core';
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { CreatedAt, Json, JsonWithDefault, NullableJson, NullableTimestamp } from './columns.ts';

// sessions: one row per conversation, holding its status, fence, seq counter and the
// context-management state (boundary pointer, last usage, learned token ratio, compactions).

/** The provider's last usage report and the seq of the assistant message it belongs to. */
export interface LastUsage {
  usage: Usage;
  messageSeq: number;
}

export interface SessionTable {
  id: string;
  tenant_id: string;
  agent_name: string;
  agent: Json<AgentConfig>;
  status: ColumnType<SessionStatus, SessionStatus | undefined, SessionStatus>;
  status_detail: string | null;
  fence: Generated<number>;
  last_seq: Generated<number>;
  step_count: Generated<number>;
  boundary_seq: number | null;
  last_usage: NullableJson<LastUsage>;
  token_ratio: number | null;
  /** tiktoken tokens of the reports token_ratio was learned from (null: none recorded). */
  token_ratio_weight: ColumnType<number | null, number | null | undefined, number | null>;
  compaction_count: Generated<number>;
  last_compaction_at: NullableTimestamp;
  error: NullableJson<ErrorData>;
  title: string | null;
  parent_session_id: string | null;
  metadata: JsonWithDefault<Record<string, unknown>>;
  /** last_seq when POST …/abort asked to stop the turn; null once a runner consumed it. */
  abort_requested_seq: ColumnType<number | null, number | null | undefined, number | null>;
  /** interactive (POST /v1/sessions) or batch (POST /v1/batches): sets its jobs' priority. */
  kind: ColumnType<SessionKind, SessionKind | undefined, SessionKind>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
  /** Trace context of the runner's last fenced write, while tracing is on (migration 0010). */
  traceparent: ColumnType<string | null, string | null | undefined, string | null>;
}
export type SessionRow = Selectable<SessionTable>;
export type NewSessionRow = Insertable<SessionTable>;
