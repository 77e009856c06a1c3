import type { ErrorData } from '@loopline/core';
import type { ColumnType, Insertable, Selectable } from 'kysely';
import type { CreatedAt, NullableJson, NullableTimestamp } from './columns.ts';

// compactions: one row per compaction run (docs/context.md §5.7): when, why, rung, tokens
// before/after, duration, model, status.

/**
 * Why the compaction happened: the loop's overflow check, POST /compact, a request too large, or
 * the idle-session background job.
 */
export type CompactionReason = 'auto' | 'manual' | 'overflow' | 'background';
/** `noop`: nothing new to summarise, or the result would not have shrunk the context; nothing changed. */
export type CompactionStatus = 'running' | 'completed' | 'failed' | 'noop';

export interface CompactionTable {
  id: string;
  tenant_id: string;
  session_id: string;
  message_id: string;
  part_id: string;
  summary_message_id: string | null;
  reason: CompactionReason;
  /** The ladder rung that produced the summary (core names them; e.g. the LLM summary or the structural one). */
  rung: string | null;
  status: ColumnType<CompactionStatus, CompactionStatus | undefined, CompactionStatus>;
  tokens_before: number | null;
  tokens_after: number | null;
  head_messages: number | null;
  tail_start_id: string | null;
  model: string | null;
  job_id: string | null;
  attempt: number | null;
  started_at: CreatedAt;
  finished_at: NullableTimestamp;
  duration_ms: number | null;
  requests: ColumnType<number | null, number | null | undefined, number | null>;
  error: NullableJson<ErrorData>;
}
export type CompactionRow = Selectable<CompactionTable>;
export type NewCompactionRow = Insertable<CompactionTable>;
