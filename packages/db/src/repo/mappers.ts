import type {
  AgentConfig,
  ErrorData,
  Message,
  Part,
  SessionKind,
  SessionStatus,
  ToolConfig,
  Usage,
} from '@loopline/core';
import type { CompactionReason, CompactionRow, CompactionStatus } from '../tables/compaction.table.ts';
import type { MessageInfo, MessageRow } from '../tables/message.table.ts';
import type { PartData, PartRow } from '../tables/part.table.ts';
import type { LastUsage, SessionRow } from '../tables/session.table.ts';
import type { StepEstimate, StepKind, StepOutcome, StepRow } from '../tables/step.table.ts';
import type { TenantRow } from '../tables/tenant.table.ts';
import type { NamedConfig } from './named-configs.ts';

// Rows ↔ domain shapes, in one place. messages.info holds the Message minus id/sessionId/seq/
// reverted; parts.data holds the Part minus id/sessionId/messageId/tokens. Reads are not
// re-validated with zod (every write goes through these functions); tests parse them.

/** The messages.info column of a message (without id, sessionId, seq and reverted). */
export function messageInfo(message: Message): MessageInfo {
  const { id: _id, sessionId: _sessionId, seq: _seq, reverted: _reverted, ...info } = message;
  return info as MessageInfo;
}

/** A messages row as a Message (`reverted` only when set). */
export function toMessage(row: Pick<MessageRow, 'id' | 'session_id' | 'seq' | 'info' | 'reverted'>): Message {
  const message = { ...row.info, id: row.id, sessionId: row.session_id, seq: row.seq } as Message;
  if (row.reverted) message.reverted = true;
  return message;
}

/** The parts.data column of a part (without id, sessionId, messageId and tokens). */
export function partData(part: Part): PartData {
  const { id: _id, sessionId: _sessionId, messageId: _messageId, tokens: _tokens, ...data } = part;
  return data as PartData;
}

/** A parts row as a Part. */
export function toPart(row: Pick<PartRow, 'id' | 'session_id' | 'message_id' | 'data' | 'tokens'>): Part {
  return {
    ...row.data,
    id: row.id,
    sessionId: row.session_id,
    messageId: row.message_id,
    tokens: row.tokens,
  } as Part;
}

export interface TenantInfo {
  id: string;
  name: string;
  settings: Record<string, unknown>;
  createdAt: Date;
}

/** A tenants row as TenantInfo. */
export function toTenant(row: TenantRow): TenantInfo {
  return { id: row.id, name: row.name, settings: row.settings, createdAt: row.created_at };
}

export type AgentInfo = NamedConfig<AgentConfig>;
export type ToolInfo = NamedConfig<ToolConfig>;

export interface SessionInfo {
  id: string;
  tenantId: string;
  agentName: string;
  agent: AgentConfig;
  status: SessionStatus;
  statusDetail: string | null;
  fence: number;
  /** The last message seq handed out in this session. */
  lastSeq: number;
  stepCount: number;
  /** seq of the compaction user message of the newest completed boundary. */
  boundarySeq: number | null;
  lastUsage: LastUsage | null;
  /** Provider-to-tiktoken ratio learned from this session's calls. */
  tokenRatio: number | null;
  /** tiktoken tokens of the reports the ratio was learned from (null: none recorded). */
  tokenRatioWeight: number | null;
  compactionCount: number;
  lastCompactionAt: Date | null;
  error: ErrorData | null;
  title: string | null;
  parentSessionId: string | null;
  metadata: Record<string, unknown>;
  /** last_seq when an abort was requested and not yet consumed by a runner (session control). */
  abortRequestedSeq: number | null;
  /** interactive or batch: batch sessions' jobs run at a lower priority. */
  kind: SessionKind;
  createdAt: Date;
  updatedAt: Date;
}

/** A sessions row as SessionInfo. */
export function toSession(row: SessionRow): SessionInfo {
  return { ...toSessionListItem(row), agent: row.agent };
}

/** A session without its frozen agent config (which may be large): what lists need. */
export type SessionListItem = Omit<SessionInfo, 'agent'>;

/** A session row read without its `agent` column. */
export function toSessionListItem(row: Omit<SessionRow, 'agent' | 'traceparent'>): SessionListItem {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    agentName: row.agent_name,
    status: row.status,
    statusDetail: row.status_detail,
    fence: row.fence,
    lastSeq: row.last_seq,
    stepCount: row.step_count,
    boundarySeq: row.boundary_seq,
    lastUsage: row.last_usage,
    tokenRatio: row.token_ratio,
    tokenRatioWeight: row.token_ratio_weight ?? null,
    compactionCount: row.compaction_count,
    lastCompactionAt: row.last_compaction_at,
    error: row.error,
    title: row.title,
    parentSessionId: row.parent_session_id,
    metadata: row.metadata,
    abortRequestedSeq: row.abort_requested_seq ?? null,
    kind: row.kind,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export interface StepInfo {
  id: string;
  sessionId: string;
  step: number;
  kind: StepKind;
  jobId: string;
  attempt: number;
  fence: number;
  messageId: string | null;
  startedAt: Date;
  finishedAt: Date | null;
  durationMs: number | null;
  outcome: StepOutcome | null;
  usage: Usage | null;
  requestId: string | null;
  responseId: string | null;
  error: ErrorData | null;
  /** The pre-call estimate of the prompt (model steps); compare with usage's prompt side. */
  estimate: StepEstimate | null;
}

/** A steps row as StepInfo (durationMs derived from its times). */
export function toStep(row: StepRow): StepInfo {
  return {
    id: row.id,
    sessionId: row.session_id,
    step: row.step,
    kind: row.kind,
    jobId: row.job_id,
    attempt: row.attempt,
    fence: row.fence,
    messageId: row.message_id,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    durationMs: row.finished_at ? row.finished_at.getTime() - row.started_at.getTime() : null,
    outcome: row.outcome,
    usage: row.usage,
    requestId: row.request_id,
    responseId: row.response_id,
    error: row.error,
    estimate: row.estimate ?? null,
  };
}

export interface CompactionInfo {
  id: string;
  sessionId: string;
  /** The compaction user message and its compaction part. */
  messageId: string;
  partId: string;
  summaryMessageId: string | null;
  reason: CompactionReason;
  rung: string | null;
  status: CompactionStatus;
  tokensBefore: number | null;
  tokensAfter: number | null;
  headMessages: number | null;
  tailStartId: string | null;
  model: string | null;
  jobId: string | null;
  attempt: number | null;
  startedAt: Date;
  finishedAt: Date | null;
  durationMs: number | null;
  /** Model requests the compaction made (null for runs recorded before this was counted). */
  requests: number | null;
  error: ErrorData | null;
}

/** A compactions row as CompactionInfo. */
export function toCompaction(row: CompactionRow): CompactionInfo {
  return {
    id: row.id,
    sessionId: row.session_id,
    messageId: row.message_id,
    partId: row.part_id,
    summaryMessageId: row.summary_message_id,
    reason: row.reason,
    rung: row.rung,
    status: row.status,
    tokensBefore: row.tokens_before,
    tokensAfter: row.tokens_after,
    headMessages: row.head_messages,
    tailStartId: row.tail_start_id,
    model: row.model,
    jobId: row.job_id,
    attempt: row.attempt,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    durationMs: row.duration_ms,
    requests: row.requests ?? null,
    error: row.error,
  };
}
