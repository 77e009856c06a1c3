import type { SessionStatus } from '@loopline/core';
import { CompiledQuery } from 'kysely';
import type { Db } from '../client.ts';
import { toJson } from '../tables/columns.ts';
import { BATCH_PARTS_INSERT, batchParts } from './batch-parts.ts';
import {
  type AppendAndQueueInput,
  type AppendAndQueueResult,
  type AppendedRow,
  appendClauses,
  appendResult,
  appendShape,
  appendUserMessageAndQueue,
  prepareAppend,
} from './messages.ts';

// Many user messages, each to its own session, in ONE statement: what appendUserMessageAndQueue
// does for one, done for a batch (the gateway's group commit, apps/gateway/src/lib/append-batch.ts).
// One statement and one commit instead of one per message: under load the gateway's statements,
// their socket writes and PostgreSQL's commits are its largest cost (bench/profile-findings.md).
//
// Per message the outcome is the single statement's: the session row locked FOR UPDATE (so the
// status replaced is the one found after any wait), last_seq + 1, idle|error → queued, the
// message and its parts; undefined when the session is not that tenant's. The rows are locked in
// session-id order, so two batches never wait on each other in a cycle. All of a batch commits
// together; a statement that fails fails for all of them, and the caller decides what to retry.

/** The statement's text per (wakeFrom, midRunIn), built once. The messages come as one jsonb. */
const batchStatements = new Map<string, string>();

function batchStatement(wakeFrom: readonly SessionStatus[], midRunIn: readonly SessionStatus[]): string {
  const shape = appendShape({ wakeFrom, midRunIn });
  let text = batchStatements.get(shape);
  if (text !== undefined) return text;
  const { set, midRun } = appendClauses(wakeFrom, midRunIn);
  text = `with input as (
      select * from jsonb_to_recordset($1::jsonb)
        as i(ord int, session_id text, tenant_id text, message_id text, info jsonb, parts jsonb)
    ), prev as (
      select s.id, s.tenant_id, s.status from sessions s
      join input i on s.id = i.session_id and s.tenant_id = i.tenant_id
      order by s.id
      for update of s
    ), s as (
      update sessions s set ${set}
      from prev
      where s.id = prev.id and s.tenant_id = prev.tenant_id
      returning s.id, s.tenant_id, s.agent_name, s.status, s.kind, s.last_seq, prev.status as prev_status
    ), m as (
      insert into messages (id, tenant_id, session_id, seq, role, info)
      select i.message_id, s.tenant_id, s.id, s.last_seq, 'user',
        i.info || jsonb_build_object('agent', s.agent_name) || ${midRun}
      from s join input i on i.session_id = s.id and i.tenant_id = s.tenant_id
      order by s.id
      returning id
    ), p as (
      ${BATCH_PARTS_INSERT}
    )
    select i.ord, s.agent_name, s.status, s.kind, s.last_seq, s.prev_status
    from s join input i on i.session_id = s.id and i.tenant_id = s.tenant_id`;
  batchStatements.set(shape, text);
  return text;
}

/** Every input must wake and mark alike (one statement text per shape). */
function sameShape(inputs: readonly AppendAndQueueInput[]): boolean {
  const first = appendShape(inputs[0]!);
  return inputs.every((i) => appendShape(i) === first);
}

/**
 * appendUserMessageAndQueue for several messages, each to a different session, in one statement.
 * Results in input order; undefined for a message whose session is not its tenant's.
 */
export async function appendUserMessagesAndQueue(
  db: Db,
  inputs: readonly AppendAndQueueInput[],
): Promise<Array<AppendAndQueueResult | undefined>> {
  if (inputs.length === 0) return [];
  if (inputs.length === 1) return [await appendUserMessageAndQueue(db, inputs[0]!)];
  if (new Set(inputs.map((i) => i.sessionId)).size !== inputs.length)
    throw new TypeError('a batch of appends holds one message per session');
  if (!sameShape(inputs)) throw new TypeError('a batch of appends shares wakeFrom and midRunIn');
  const prepared = inputs.map(prepareAppend);
  const rows = prepared.map((p, ord) => ({
    ord,
    session_id: p.input.sessionId,
    tenant_id: p.input.tenantId,
    message_id: p.id,
    info: p.base,
    parts: batchParts(p.parts),
  }));
  const text = batchStatement(inputs[0]!.wakeFrom, inputs[0]!.midRunIn);
  const result = await db.executeQuery<AppendedRow & { ord: number }>(
    CompiledQuery.raw(text, [toJson(rows)]),
  );
  const out: Array<AppendAndQueueResult | undefined> = inputs.map(() => undefined);
  for (const row of result.rows) out[row.ord] = appendResult(prepared[row.ord]!, row);
  return out;
}
