import type { ErrorData, FinishReason, Usage } from '@loopline/core';
import type { ColumnType, Insertable, Selectable } from 'kysely';
import type { CreatedAt, NullableJson, NullableTimestamp } from './columns.ts';

// steps: the step ledger, one row per job attempt of a loop step, compaction or prune pass.

export type StepKind = 'step' | 'compaction' | 'prune';

/**
 * How a ledger entry ended.
 * - a FinishReason (`stop`, `tool-calls`, `length`, …): the model call finished with it.
 * - `retryable` | `overflow` | `terminal`: the model call failed, classified as in llm/errors.ts.
 * - `aborted`: the user aborted the session.
 * - `compact`: the step handed over to a compaction instead of calling the model.
 * - `completed` | `failed`: a compaction or prune pass ended.
 * - `stale`: the runner lost its fence; its writes were rejected.
 */
export type StepOutcome =
  | FinishReason
  | 'retryable'
  | 'overflow'
  | 'terminal'
  | 'aborted'
  | 'compact'
  | 'completed'
  | 'failed'
  | 'stale';

/** A step's pre-call estimate, as the ledger keeps it beside the reported usage. */
export interface StepEstimate {
  /** Best guess of the prompt in provider tokens. */
  tokens: number;
  /** With the margin: what the fit and overflow checks used. */
  bound: number;
  /** Built on the provider's previous report; false = tiktoken counts × ratio alone. */
  anchored: boolean;
  ratio: number;
  margin: number;
}

export interface StepTable {
  id: string;
  tenant_id: string;
  session_id: string;
  step: number;
  kind: StepKind;
  job_id: string;
  attempt: number;
  fence: number;
  message_id: string | null;
  started_at: CreatedAt;
  finished_at: NullableTimestamp;
  request_id: string | null;
  response_id: string | null;
  usage: NullableJson<Usage>;
  outcome: StepOutcome | null;
  error: NullableJson<ErrorData>;
  /** The pre-call estimate of the step's prompt (model steps only). */
  estimate: ColumnType<StepEstimate | null, string | null | undefined, string | null>;
}
export type StepRow = Selectable<StepTable>;
export type NewStepRow = Insertable<StepTable>;
