import type { AssistantMessage } from '@loopline/core';
import { CompiledQuery } from 'kysely';
import type { Db } from '../client.ts';
import { type Fence, staleFenceError } from '../fence.ts';
import { type Settled, settle } from '../group-commit.ts';
import { toJson } from '../tables/columns.ts';
import { BATCH_SESSIONS_LOCK } from './batch-lock.ts';
import { BATCH_PARTS_INSERT, batchParts } from './batch-parts.ts';
import {
  assistantInfoOf,
  type StartAssistantStepInput,
  startAssistantStep,
  startedOrExisting,
} from './step-start.ts';

// Many step starts, each of its own session and fence, in ONE statement: what startAssistantStep
// does for one, done for a batch (the worker's group commit, docs/decisions.md D40). Per start the
// outcome is the single statement's: the fence check on the session row (which also takes the row
// lock, seq, step count and status), then the message, its parts and the ledger row, written only
// where the check matched. A stale start writes nothing and fails alone with StaleFenceError; the
// others commit. The rows are locked in session-id order, so two batches (or a batch and the
// gateway's) never wait on each other in a cycle. All of a batch commits together; a statement
// that fails fails for all of them, and the caller retries each on its own.

export interface StepStart {
  fence: Fence;
  input: StartAssistantStepInput;
}

// The fence condition reads `s."fence" = i.fence` (the input row's fence): the fault tests' write
// audit recognises a fence check by it, as it does `"fence" = $n` in the single statement.
const STATEMENT = `with input as (
    select * from jsonb_to_recordset($1::jsonb) as i(ord int, session_id text, tenant_id text,
      fence bigint, step int, status text, message_id text, info jsonb, parts jsonb, step_id text,
      job_id text, attempt int, estimate jsonb)
  ), locked as (
    ${BATCH_SESSIONS_LOCK}
  ), f as (
    update "sessions" s set "updated_at" = now(), "step_count" = i.step, "last_seq" = s.last_seq + 1,
      "status" = coalesce(i.status, s.status),
      "status_detail" = case when i.status is null then s.status_detail end,
      "error" = case when i.status is null then s.error end
    from input i
    where s.id = i.session_id and s.tenant_id = i.tenant_id and s."fence" = i.fence
      and s.id in (select id from locked)
    returning s.id, s.tenant_id, s.last_seq, i.ord
  ), m as (
    insert into messages (id, tenant_id, session_id, seq, role, info)
    select i.message_id, f.tenant_id, f.id, f.last_seq, 'assistant', i.info
    from f join input i on i.ord = f.ord
    order by f.id
    on conflict (id) do nothing
    returning id
  ), p as (
    ${BATCH_PARTS_INSERT}
  ), st as (
    insert into steps (id, tenant_id, session_id, step, kind, job_id, attempt, fence, message_id, estimate)
    select i.step_id, f.tenant_id, f.id, i.step, 'step', i.job_id, i.attempt, i.fence, i.message_id, i.estimate
    from f join input i on i.ord = f.ord
    order by f.id
    on conflict (id) do nothing
    returning id
  )
  select f.ord, f.last_seq, exists (select 1 from m join input i on i.message_id = m.id where i.ord = f.ord) as inserted
  from f`;

/**
 * startAssistantStep for several sessions in one statement. Outcomes in input order: the started
 * message, or the error the single statement would have thrown (StaleFenceError).
 */
export async function startAssistantSteps(
  db: Db,
  starts: readonly StepStart[],
): Promise<Array<Settled<AssistantMessage>>> {
  if (starts.length === 0) return [];
  if (starts.length === 1) {
    const { fence, input } = starts[0]!;
    return [await settle(startAssistantStep(db, fence, input))];
  }
  if (new Set(starts.map((s) => s.fence.sessionId)).size !== starts.length)
    throw new TypeError('a batch of step starts holds one start per session');
  const infos = starts.map(({ fence: f, input }) => assistantInfoOf(f, input));
  const rows = starts.map(({ fence: f, input }, ord) => ({
    ord,
    session_id: f.sessionId,
    tenant_id: f.tenantId,
    fence: f.fence,
    step: input.step,
    status: input.status ?? null,
    message_id: input.messageId,
    info: infos[ord]!.stored,
    parts: batchParts(input.parts),
    step_id: input.stepRow.id,
    job_id: input.stepRow.jobId,
    attempt: input.stepRow.attempt,
    estimate: input.stepRow.estimate ?? null,
  }));
  const { rows: done } = await db.executeQuery<{ ord: number; last_seq: number; inserted: boolean }>(
    CompiledQuery.raw(STATEMENT, [toJson(rows)]),
  );
  const byOrd = new Map(done.map((r) => [r.ord, r]));
  return Promise.all(
    starts.map(async ({ fence: f }, ord): Promise<Settled<AssistantMessage>> => {
      const row = byOrd.get(ord);
      try {
        if (!row) throw await staleFenceError(db, f);
        return { value: await startedOrExisting(db, f, infos[ord]!.info, row) };
      } catch (error) {
        return { error };
      }
    }),
  );
}
