import type { AssistantMessage, ErrorData, Part, Usage } from '@loopline/core';
import { CompiledQuery } from 'kysely';
import type { Db } from '../client.ts';
import { type Fence, staleFenceError } from '../fence.ts';
import { type Settled, settle } from '../group-commit.ts';
import { toJson } from '../tables/columns.ts';
import { BATCH_SESSIONS_LOCK } from './batch-lock.ts';
import {
  fencedStatement,
  finishStepCte,
  insertPartsCte,
  updateAssistantInfoCte,
  updatePartsCte,
} from './fenced-statement.ts';
import { messageInfo, partData } from './mappers.ts';

// The closing write of a model step that ran no tool whose output was cut (docs/durability.md §3):
// the fence check with the step's usage report and learned ratio on the session row, then the
// parts that change (tool results written running) and the parts not written yet (the stream's, the
// step-finish), the message's final info and the ledger row, in ONE statement. For one step, the
// fenced CTEs of fenced-statement.ts; for several (the worker's group commit, docs/decisions.md
// D44), one statement of fixed text: per step the same fence check and the same writes, each
// checked to touch exactly its rows. A stale step writes nothing and fails alone with
// StaleFenceError; a step whose rows are missing (a bug) fails the whole statement, and the caller
// writes each step again on its own, so it fails alone too. The session rows are locked in id order.

export interface StepFinishInput {
  /** The step's usage report on the session row, and the ratio when one was learned. */
  progress: {
    lastUsage: { usage: Usage; messageSeq: number };
    tokenRatio?: number;
    tokenRatioWeight?: number;
  };
  /** Parts already written whose data changes (results of calls written running), any message of the session. */
  updates: readonly Part[];
  /** The message's parts not written yet, in order (the step-finish last); at least one. */
  inserts: readonly Part[];
  /** The assistant message's final info. */
  message: AssistantMessage;
  /** The ledger row to close (as finishStep, message_id kept). */
  step: {
    id: string;
    outcome: string;
    usage?: Usage | null;
    responseId?: string | null;
    error?: ErrorData | null;
  };
}

export interface StepFinish {
  fence: Fence;
  input: StepFinishInput;
}

/** Throws for a finish no statement may write: nothing to insert, or parts of another message. */
export function checkStepFinish(input: StepFinishInput): void {
  if (input.inserts.length === 0) throw new TypeError('a step finish inserts at least its step-finish part');
  if (input.inserts.some((p) => p.messageId !== input.message.id || p.sessionId !== input.message.sessionId))
    throw new TypeError('a step finish inserts parts of its own message only');
}

/** Closes one model step under the fence: the session's last_seq, or StaleFenceError. */
export async function finishModelStep(db: Db, f: Fence, input: StepFinishInput): Promise<number> {
  checkStepFinish(input);
  return fencedStatement(db, f, input.progress, [
    ...(input.updates.length > 0 ? [updatePartsCte(f.tenantId, input.updates)] : []),
    insertPartsCte(f.tenantId, input.inserts),
    updateAssistantInfoCte(f.tenantId, input.message),
    finishStepCte(f.tenantId, input.step.id, input.step),
  ]);
}

// The fence condition reads `s."fence" = i.fence` (the input row's fence): the fault tests' write
// audit recognises a fence check by it. Part rows keep their own message id (`m`), as the single
// statement's updatePartsCte does; inserts belong to the step's message, in input order.
const STATEMENT = `with input as (
    select * from jsonb_to_recordset($1::jsonb) as i(ord int, session_id text, tenant_id text,
      fence bigint, last_usage jsonb, token_ratio float8, token_ratio_weight float8, message_id text,
      info jsonb, updates jsonb, inserts jsonb, step_id text, outcome text, usage jsonb,
      response_id text, error jsonb)
  ), locked as (
    ${BATCH_SESSIONS_LOCK}
  ), f as (
    update "sessions" s set "updated_at" = now(), "last_usage" = i.last_usage,
      "token_ratio" = coalesce(i.token_ratio, s.token_ratio),
      "token_ratio_weight" = coalesce(i.token_ratio_weight, s.token_ratio_weight)
    from input i
    where s.id = i.session_id and s.tenant_id = i.tenant_id and s."fence" = i.fence
      and s.id in (select id from locked)
    returning s.id, s.tenant_id, s.last_seq, i.ord
  ), upd_parts as (
    update parts p set type = e.v->>'type', data = e.v->'data', tokens = (e.v->>'tokens')::int,
      updated_at = now()
    from f join input i on i.ord = f.ord
    cross join lateral jsonb_array_elements(i.updates) as e(v)
    where p.id = e.v->>'id' and p.tenant_id = f.tenant_id and p.session_id = f.id
      and p.message_id = e.v->>'m'
    returning f.ord
  ), ins_parts as (
    insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
    select e.v->>'id', m.tenant_id, m.session_id, m.id, e.v->>'type', e.v->'data', (e.v->>'tokens')::int
    from f join input i on i.ord = f.ord
    join messages m on m.id = i.message_id and m.tenant_id = f.tenant_id and m.session_id = f.id
    cross join lateral jsonb_array_elements(i.inserts) with ordinality as e(v, n)
    order by f.id, e.n
    on conflict (id) do nothing
    returning session_id
  ), upd_message as (
    update messages x set info = i.info, updated_at = now()
    from f join input i on i.ord = f.ord
    where x.id = i.message_id and x.tenant_id = f.tenant_id and x.session_id = f.id
      and x.role = 'assistant'
    returning x.session_id
  ), upd_step as (
    update steps st set outcome = i.outcome, finished_at = now(), usage = i.usage, request_id = null,
      response_id = i.response_id, error = i.error
    from f join input i on i.ord = f.ord
    where st.id = i.step_id and st.tenant_id = f.tenant_id
    returning f.ord
  )
  select f.ord, f.last_seq,
    (case when (select count(*) from upd_parts u where u.ord = f.ord) = jsonb_array_length(i.updates)
      and (select count(*) from ins_parts p where p.session_id = f.id) = jsonb_array_length(i.inserts)
      and (select count(*) from upd_message x where x.session_id = f.id) = 1
      and (select count(*) from upd_step s where s.ord = f.ord) = 1
     then '1' else 'fenced statement: a row it writes is missing (nothing written)' end)::int as ok
  from f join input i on i.ord = f.ord`;

const partRow = (p: Part) => ({
  id: p.id,
  m: p.messageId,
  type: p.type,
  data: partData(p),
  tokens: p.tokens,
});

/**
 * finishModelStep for several sessions in one statement. Outcomes in input order: the session's
 * last_seq, or the error the single statement would have thrown (StaleFenceError).
 */
export async function finishModelSteps(
  db: Db,
  finishes: readonly StepFinish[],
): Promise<Array<Settled<number>>> {
  if (finishes.length === 1) {
    const { fence, input } = finishes[0]!;
    return [await settle(finishModelStep(db, fence, input))];
  }
  if (new Set(finishes.map((s) => s.fence.sessionId)).size !== finishes.length)
    throw new TypeError('a batch of step finishes holds one finish per session');
  const rows = finishes.map(({ fence: f, input }, ord) => {
    checkStepFinish(input);
    return {
      ord,
      session_id: f.sessionId,
      tenant_id: f.tenantId,
      fence: f.fence,
      last_usage: input.progress.lastUsage,
      token_ratio: input.progress.tokenRatio ?? null,
      token_ratio_weight: input.progress.tokenRatioWeight ?? null,
      message_id: input.message.id,
      info: messageInfo(input.message),
      updates: input.updates.map(partRow),
      inserts: input.inserts.map(partRow),
      step_id: input.step.id,
      outcome: input.step.outcome,
      usage: input.step.usage ?? null,
      response_id: input.step.responseId ?? null,
      error: input.step.error ?? null,
    };
  });
  const { rows: done } = await db.executeQuery<{ ord: number; last_seq: number }>(
    CompiledQuery.raw(STATEMENT, [toJson(rows)]),
  );
  const byOrd = new Map(done.map((r) => [r.ord, r]));
  return Promise.all(
    finishes.map(async ({ fence: f }, ord): Promise<Settled<number>> => {
      const row = byOrd.get(ord);
      if (row) return { value: Number(row.last_seq) };
      try {
        throw await staleFenceError(db, f);
      } catch (error) {
        return { error };
      }
    }),
  );
}
