import type { AssistantMessage, Part, SessionStatus } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';
import { type Fence, staleFenceError } from '../fence.ts';
import { toJson, toJsonOrNull } from '../tables/columns.ts';
import type { StepEstimate } from '../tables/step.table.ts';
import { messageInfo, partData } from './mappers.ts';
import { getMessage } from './messages.ts';

// The opening write of a model step as ONE statement instead of five round trips: the first CTE is
// the fence check (docs/durability.md §3), which also takes the row lock, seq, step count and
// status; the message, its parts and the ledger row select from it, so a stale fence writes nothing
// (the fault tests' write audit sees a fence check, then the writes, as with withFence).

export interface StartAssistantStepInput {
  messageId: string;
  parentId: string;
  model: string;
  agent: string;
  step: number;
  /** time.created (ms). */
  now: number;
  /** New parts of the message (fresh ids), inserted with it in order (e.g. its step-start). */
  parts: Part[];
  /** Also set the session's status (detail and error cleared). */
  status?: SessionStatus;
  stepRow: { id: string; jobId: string; attempt: number; estimate?: StepEstimate };
}

/** Writes a step's assistant message, first parts and ledger row under the fence (else StaleFenceError). */
export async function startAssistantStep(
  db: Db,
  f: Fence,
  input: StartAssistantStepInput,
): Promise<AssistantMessage> {
  const { info, stored } = assistantInfoOf(f, input);
  const statusSet =
    input.status !== undefined
      ? sql`, "status" = ${input.status}, "status_detail" = null, "error" = null`
      : sql``;
  const parts =
    input.parts.length === 0
      ? sql`select 0 as n`
      : sql`insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
          select v.id, m.tenant_id, m.session_id, m.id, v.type, v.data, v.tokens
          from m cross join (values ${sql.join(
            input.parts.map(
              (p, i) =>
                sql`(${i}::int, ${p.id}::text, ${p.type}::text, ${toJson(partData(p))}::jsonb, ${p.tokens}::int)`,
            ),
          )}) as v(ord, id, type, data, tokens)
          order by v.ord
          returning id`;
  const { rows } = await sql<{ last_seq: number; inserted: number }>`
    with f as (
      update "sessions" set "updated_at" = now(), "step_count" = ${input.step}, "last_seq" = last_seq + 1${statusSet}
      where "id" = ${f.sessionId} and "tenant_id" = ${f.tenantId} and "fence" = ${f.fence}
      returning last_seq
    ),
    m as (
      insert into messages (id, tenant_id, session_id, seq, role, info)
      select ${info.id}, ${f.tenantId}, ${f.sessionId}, f.last_seq, 'assistant', ${toJson(stored)}::jsonb
      from f
      on conflict (id) do nothing
      returning id, tenant_id, session_id
    ),
    p as (${parts}),
    s as (
      insert into steps (id, tenant_id, session_id, step, kind, job_id, attempt, fence, message_id, estimate)
      select ${input.stepRow.id}, ${f.tenantId}, ${f.sessionId}, ${input.step}, 'step', ${input.stepRow.jobId},
        ${input.stepRow.attempt}, ${f.fence}, ${info.id}, ${toJsonOrNull(input.stepRow.estimate)}::jsonb
      from f
      on conflict (id) do nothing
      returning id
    )
    select f.last_seq, (select count(*) from m)::int as inserted, (select count(*) from p)::int as parts,
      (select count(*) from s)::int as steps
    from f`.execute(db);
  const row = rows[0];
  if (!row) throw await staleFenceError(db, f);
  return startedOrExisting(db, f, info, { last_seq: row.last_seq, inserted: row.inserted > 0 });
}

/** The step's assistant message (seq 0 until the statement's), and its stored `info` column. */
export function assistantInfoOf(
  f: Fence,
  input: StartAssistantStepInput,
): { info: AssistantMessage; stored: ReturnType<typeof messageInfo> } {
  const info: AssistantMessage = {
    id: input.messageId,
    sessionId: f.sessionId,
    seq: 0, // the statement's seq, set by startedOrExisting
    role: 'assistant',
    time: { created: input.now },
    parentId: input.parentId,
    model: input.model,
    agent: input.agent,
    step: input.step,
  };
  return { info, stored: messageInfo(info) };
}

/**
 * The started message once the fence check matched: the one written, or, when a concurrent insert
 * won the (fresh) id, as createAssistantMessage, that row.
 */
export async function startedOrExisting(
  db: Db,
  f: Fence,
  /** assistantInfoOf's message (seq 0). */
  info: AssistantMessage,
  row: { last_seq: number; inserted: boolean },
): Promise<AssistantMessage> {
  if (!row.inserted) {
    const existing = (await getMessage(db, f.tenantId, f.sessionId, info.id))?.info;
    if (existing?.role !== 'assistant')
      throw new Error(`message id ${info.id} is taken outside session ${f.sessionId}`);
    return existing;
  }
  return { ...info, seq: row.last_seq };
}
