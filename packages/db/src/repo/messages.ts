import {
  type AssistantMessage,
  type Message,
  type NewPart,
  newId,
  type Part,
  type SessionStatus,
  type UserMessage,
  type WithParts,
} from '@loopline/core';
import { CompiledQuery, sql } from 'kysely';
import type { Db, Trx } from '../client.ts';
import { NotFoundError } from '../errors.ts';
import { toJson } from '../tables/columns.ts';
import type { SessionRow } from '../tables/session.table.ts';
import { withParts } from './history.ts';
import { messageInfo, partData, type SessionInfo, toMessage } from './mappers.ts';
import { insertPart } from './parts.ts';
import { allocateSeq } from './seq.ts';

// Writing the log: user messages (with their parts, one transaction), assistant messages
// (idempotent by id), info updates and revert marks. Rows are never deleted.

/** Parts a user message may hold; `id` optional (defaults to newId('prt')). */
export type UserPartInput = Extract<NewPart, { type: 'text' | 'file' | 'compaction' | 'subtask' }> & {
  id?: string;
};
const USER_PART_TYPES: ReadonlySet<string> = new Set(['text', 'file', 'compaction', 'subtask']);

export interface AppendUserMessageInput {
  tenantId: string;
  sessionId: string;
  agent: string;
  system?: string;
  synthetic?: boolean;
  midRun?: boolean;
  parts: UserPartInput[];
  /** A caller-derived id makes the append idempotent: an existing message is returned as is. */
  id?: string;
  /** time.created in ms (default Date.now()); pass clock.now(). */
  now?: number;
}

/** Appends a user message and its parts; runs in the caller's transaction or opens one. */
export async function appendUserMessage(db: Db, input: AppendUserMessageInput): Promise<WithParts> {
  for (const part of input.parts) {
    if (!USER_PART_TYPES.has(part.type))
      throw new TypeError(`a user message cannot hold a ${part.type} part`);
  }
  const run = async (trx: Trx): Promise<WithParts> => {
    if (input.id) {
      const existing = await getMessage(trx, input.tenantId, input.sessionId, input.id);
      if (existing) return existing;
    }
    const seq = await allocateSeq(trx, input.tenantId, input.sessionId);
    const info: UserMessage = {
      id: input.id ?? newId('msg'),
      sessionId: input.sessionId,
      seq,
      role: 'user',
      time: { created: input.now ?? Date.now() },
      agent: input.agent,
      ...(input.system !== undefined ? { system: input.system } : {}),
      ...(input.synthetic ? { synthetic: true } : {}),
      ...(input.midRun ? { midRun: true } : {}),
    };
    if (!(await insertMessage(trx, input.tenantId, info))) {
      return conflicting(trx, input.tenantId, input.sessionId, info.id);
    }
    const parts: Part[] = [];
    for (const { id, ...rest } of input.parts) {
      const part = {
        ...rest,
        id: id ?? newId('prt'),
        sessionId: input.sessionId,
        messageId: info.id,
      } as Part;
      parts.push(await insertPart(trx, input.tenantId, part));
    }
    return { info, parts };
  };
  return db.isTransaction ? run(db as Trx) : db.transaction().execute(run);
}

export interface CreateAssistantMessageInput {
  tenantId: string;
  sessionId: string;
  /** A derived id (e.g. from the step or the compaction part) makes a retry find the same row. */
  id?: string;
  parentId: string;
  model: string;
  agent: string;
  step?: number;
  summary?: boolean;
  now?: number;
  /**
   * A seq the caller already took for this message (withFence's `allocateSeq`, folded into the
   * fence check). With it, `id` must be fresh (newId): no existing row is looked for first; an id
   * conflict still returns the existing row.
   */
  seq?: number;
  /**
   * Parts to insert with the message, in the same statement (only with `seq`): new parts of this
   * message (fresh ids), in order. Not inserted when the message already existed.
   */
  parts?: Part[];
}

/** Creates an assistant message, or returns the existing one with this id. */
export async function createAssistantMessage(
  trx: Trx,
  input: CreateAssistantMessageInput,
): Promise<AssistantMessage> {
  if (input.id && input.seq === undefined) {
    const existing = await getMessageInfo(trx, input.tenantId, input.sessionId, input.id);
    if (existing) return asAssistant(existing);
  }
  const seq = input.seq ?? (await allocateSeq(trx, input.tenantId, input.sessionId));
  const info: AssistantMessage = {
    id: input.id ?? newId('msg'),
    sessionId: input.sessionId,
    seq,
    role: 'assistant',
    time: { created: input.now ?? Date.now() },
    parentId: input.parentId,
    model: input.model,
    agent: input.agent,
    ...(input.step !== undefined ? { step: input.step } : {}),
    ...(input.summary ? { summary: true } : {}),
  };
  const inserted = await insertMessageWithParts(trx, input.tenantId, info, input.parts ?? []);
  if (!inserted) {
    return asAssistant((await conflicting(trx, input.tenantId, input.sessionId, info.id)).info);
  }
  return info;
}

/** Replaces a message's info (finish, error, usage, time.completed, …); id, seq and role stay. */
export async function updateMessageInfo(trx: Trx, tenantId: string, message: Message): Promise<void> {
  const result = await trx
    .updateTable('messages')
    .set({ info: toJson(messageInfo(message)), updated_at: sql<Date>`now()` })
    .where('id', '=', message.id)
    .where('tenant_id', '=', tenantId)
    .where('session_id', '=', message.sessionId)
    .where('role', '=', message.role)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw new NotFoundError('message', message.id);
}

/** A message of the session with its parts, or undefined. */
export async function getMessage(
  db: Db,
  tenantId: string,
  sessionId: string,
  messageId: string,
): Promise<WithParts | undefined> {
  const row = await messageRow(db, tenantId, sessionId, messageId);
  if (!row) return undefined;
  const [message] = await withParts(db, tenantId, sessionId, [row]);
  return message;
}

/** Hides every message from `fromSeq` on from the model (docs/context.md §7); returns how many were marked. */
export async function markReverted(
  trx: Trx,
  tenantId: string,
  sessionId: string,
  fromSeq: number,
): Promise<number> {
  const result = await trx
    .updateTable('messages')
    .set({ reverted: true, updated_at: sql<Date>`now()` })
    .where('session_id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .where('seq', '>=', fromSeq)
    .where('reverted', '=', false)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Which of `messageIds` (of this tenant and session) are hidden by a revert. */
export async function revertedMessageIds(
  db: Db,
  tenantId: string,
  sessionId: string,
  messageIds: readonly string[],
): Promise<Set<string>> {
  if (messageIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('messages')
    .select('id')
    .where('session_id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .where('id', '=', sql<string>`any(${sql.val([...messageIds])}::text[])`)
    .where('reverted', '=', true)
    .execute();
  return new Set(rows.map((r) => r.id));
}

async function insertMessage(trx: Trx, tenantId: string, info: Message): Promise<boolean> {
  const rows = await trx
    .insertInto('messages')
    .values({
      id: info.id,
      tenant_id: tenantId,
      session_id: info.sessionId,
      seq: info.seq,
      role: info.role,
      info: toJson(messageInfo(info)),
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id')
    .execute();
  return rows.length > 0;
}

/** The message and its first parts in one statement (a CTE); false when the id existed. */
async function insertMessageWithParts(
  trx: Trx,
  tenantId: string,
  info: Message,
  parts: readonly Part[],
): Promise<boolean> {
  if (parts.length === 0) return insertMessage(trx, tenantId, info);
  const values = sql.join(
    parts.map(
      (p, i) =>
        sql`(${i}::int, ${p.id}::text, ${p.type}::text, ${toJson(partData(p))}::jsonb, ${p.tokens}::int)`,
    ),
  );
  const { rows } = await sql<{ id: string }>`
    with m as (
      insert into messages (id, tenant_id, session_id, seq, role, info)
      values (${info.id}, ${tenantId}, ${info.sessionId}, ${info.seq}, ${info.role}, ${toJson(messageInfo(info))}::jsonb)
      on conflict (id) do nothing
      returning id, tenant_id, session_id
    )
    insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
    select v.id, m.tenant_id, m.session_id, m.id, v.type, v.data, v.tokens
    from m cross join (values ${values}) as v(ord, id, type, data, tokens)
    order by v.ord
    returning id`.execute(trx);
  return rows.length > 0;
}

function messageRow(db: Db, tenantId: string, sessionId: string, messageId: string) {
  return db
    .selectFrom('messages')
    .select(['id', 'session_id', 'seq', 'info', 'reverted'])
    .where('id', '=', messageId)
    .where('tenant_id', '=', tenantId)
    .where('session_id', '=', sessionId)
    .executeTakeFirst();
}

async function getMessageInfo(
  db: Db,
  tenantId: string,
  sessionId: string,
  id: string,
): Promise<Message | undefined> {
  const row = await messageRow(db, tenantId, sessionId, id);
  return row ? toMessage(row) : undefined;
}

/** A concurrent insert won the id: return its row (it must be in this tenant and session). */
async function conflicting(trx: Trx, tenantId: string, sessionId: string, id: string): Promise<WithParts> {
  const existing = await getMessage(trx, tenantId, sessionId, id);
  if (!existing) throw new Error(`message id ${id} is taken outside session ${sessionId}`);
  return existing;
}

function asAssistant(message: Message): AssistantMessage {
  if (message.role !== 'assistant') throw new Error(`message ${message.id} is not an assistant message`);
  return message;
}

export interface AppendAndQueueInput {
  tenantId: string;
  sessionId: string;
  system?: string;
  synthetic?: boolean;
  parts: UserPartInput[];
  /** time.created in ms (default Date.now()). */
  now?: number;
  /** Statuses that become `queued` (the gateway: idle and error). */
  wakeFrom: readonly SessionStatus[];
  /** Statuses (after the wake-up) in which the message is marked midRun. */
  midRunIn: readonly SessionStatus[];
}

/** The session as an append left it: what the caller answers and wakes with. */
export type AppendedSession = Pick<
  SessionInfo,
  'id' | 'tenantId' | 'agentName' | 'status' | 'kind' | 'lastSeq'
>;

export interface AppendAndQueueResult {
  message: WithParts;
  session: AppendedSession;
  /** True when the status moved from one of `wakeFrom` to queued. */
  statusChanged: boolean;
}

// Only what the caller answers and wakes with: each column returned is parsed per request.
export type AppendedRow = Pick<SessionRow, 'agent_name' | 'status' | 'kind' | 'last_seq'> & {
  prev_status: SessionStatus;
};

// The statement's text per shape (status lists, part count), built once: a POST pays for its
// parameters only, not for building and compiling the query again.
const appendStatements = new Map<string, string>();

/** The wake rules of an append, as a key: appends of one key share a statement text (and a batch). */
export function appendShape(input: Pick<AppendAndQueueInput, 'wakeFrom' | 'midRunIn'>): string {
  return `${input.wakeFrom.join(',')}|${input.midRunIn.join(',')}`;
}

/**
 * What every append statement shares (appendStatement, append-batch.ts): the session row's update
 * after `prev` (its status before, locked) — last_seq + 1, wakeFrom → queued — and the midRun mark
 * of the message's info. Status names are core's literals (never input); quoted all the same.
 */
export function appendClauses(
  wakeFrom: readonly SessionStatus[],
  midRunIn: readonly SessionStatus[],
): { set: string; midRun: string } {
  const list = (statuses: readonly SessionStatus[]) =>
    statuses.length > 0 ? statuses.map((st) => `'${st.replaceAll("'", "''")}'`).join(', ') : 'null';
  const woken = `prev.status in (${list(wakeFrom)})`;
  return {
    set: `last_seq = s.last_seq + 1,
        status = case when ${woken} then 'queued' else s.status end,
        status_detail = case when ${woken} then null else s.status_detail end,
        error = case when ${woken} then null else s.error end,
        updated_at = case when ${woken} then now() else s.updated_at end`,
    midRun: `case when s.status in (${list(midRunIn)}) then '{"midRun":true}'::jsonb else '{}'::jsonb end`,
  };
}

function appendStatement(wakeFrom: readonly SessionStatus[], midRunIn: readonly SessionStatus[], n: number) {
  const shape = `${appendShape({ wakeFrom, midRunIn })}|${n}`;
  let text = appendStatements.get(shape);
  if (text !== undefined) return text;
  const { set, midRun } = appendClauses(wakeFrom, midRunIn);
  // $1 session, $2 tenant, $3 message id, $4 info; then id, type, data, tokens of each part.
  const values = Array.from({ length: n }, (_, i) => {
    const p = 5 + 4 * i;
    return `(${i}, $${p}::text, $${p + 1}::text, $${p + 2}::jsonb, $${p + 3}::int)`;
  }).join(', ');
  text = `with prev as (
      select status from sessions where id = $1 and tenant_id = $2 for update
    ), s as (
      update sessions s set ${set}
      from prev
      where s.id = $1 and s.tenant_id = $2
      returning s.id, s.tenant_id, s.agent_name, s.status, s.kind, s.last_seq, prev.status as prev_status
    ), m as (
      insert into messages (id, tenant_id, session_id, seq, role, info)
      select $3, s.tenant_id, s.id, s.last_seq, 'user',
        $4::jsonb || jsonb_build_object('agent', s.agent_name) || ${midRun}
      from s
      returning id
    ), p as (
      insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
      select v.id, $2, $1, m.id, v.type, v.data, v.tokens
      from m cross join (values ${values}) as v(ord, id, type, data, tokens)
      order by v.ord
      returning id
    )
    select agent_name, status, kind, last_seq, prev_status from s`;
  appendStatements.set(shape, text);
  return text;
}

/** An append made ready for its statement: the message id, its info so far and its parts. */
export interface PreparedAppend {
  input: AppendAndQueueInput;
  id: string;
  /** The info without what the statement decides (agent, midRun); seq lives in its column. */
  base: { role: 'user'; time: { created: number }; system?: string; synthetic?: true };
  parts: Part[];
}

/** Throws a TypeError for a user message no append statement may write (no parts, a wrong type). */
export function checkUserMessage(input: Pick<AppendAndQueueInput, 'parts'>): void {
  if (input.parts.length === 0) throw new TypeError('a user message needs at least one part');
  for (const part of input.parts) {
    if (!USER_PART_TYPES.has(part.type))
      throw new TypeError(`a user message cannot hold a ${part.type} part`);
  }
}

/** Checks the parts of a user message and gives the message and its parts their ids. */
export function prepareAppend(input: AppendAndQueueInput): PreparedAppend {
  checkUserMessage(input);
  const id = newId('msg');
  const created = input.now ?? Date.now();
  const base = {
    role: 'user' as const,
    time: { created },
    ...(input.system !== undefined ? { system: input.system } : {}),
    ...(input.synthetic ? { synthetic: true as const } : {}),
  };
  const parts = input.parts.map(
    ({ id: partId, ...rest }) =>
      ({ ...rest, id: partId ?? newId('prt'), sessionId: input.sessionId, messageId: id }) as Part,
  );
  return { input, id, base, parts };
}

/** What an append statement returned for one message: the session as left, and the message. */
export function appendResult(prepared: PreparedAppend, row: AppendedRow): AppendAndQueueResult {
  const { input, id, base, parts } = prepared;
  const session: AppendedSession = {
    id: input.sessionId,
    tenantId: input.tenantId,
    agentName: row.agent_name,
    status: row.status,
    kind: row.kind,
    lastSeq: Number(row.last_seq),
  };
  const info: UserMessage = {
    id,
    sessionId: input.sessionId,
    seq: session.lastSeq,
    ...base,
    agent: session.agentName,
    ...(input.midRunIn.includes(session.status) ? { midRun: true } : {}),
  };
  return { message: { info, parts }, session, statusChanged: input.wakeFrom.includes(row.prev_status) };
}

/**
 * A user message with a fresh id, its parts and the session's wake-up (wakeFrom → queued) in ONE
 * statement. `prev` locks the row FOR UPDATE, so prev.status is the status replaced even after a
 * wait, and seq order is commit order (as allocateSeq). Undefined when not this tenant's session.
 */
export async function appendUserMessageAndQueue(
  db: Db,
  input: AppendAndQueueInput,
): Promise<AppendAndQueueResult | undefined> {
  const prepared = prepareAppend(input);
  const { id, base, parts } = prepared;
  const parameters: unknown[] = [input.sessionId, input.tenantId, id, toJson(base)];
  for (const p of parts) parameters.push(p.id, p.type, toJson(partData(p)), p.tokens);
  const text = appendStatement(input.wakeFrom, input.midRunIn, parts.length);
  const { rows } = await db.executeQuery<AppendedRow>(CompiledQuery.raw(text, parameters));
  const row = rows[0];
  return row ? appendResult(prepared, row) : undefined;
}

/** The newest message of the session's live log (not reverted), optionally of one role. */
export async function newestMessageInfo(
  db: Db,
  tenantId: string,
  sessionId: string,
  role?: Message['role'],
): Promise<Message | undefined> {
  let query = db
    .selectFrom('messages')
    .select(['id', 'session_id', 'seq', 'info', 'reverted'])
    .where('session_id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .where('reverted', '=', false);
  if (role) query = query.where('role', '=', role);
  const row = await query.orderBy('seq', 'desc').limit(1).executeTakeFirst();
  return row ? toMessage(row) : undefined;
}

/**
 * User messages of the live log after `seq` (input that arrived after a compaction message), with
 * the `midRun` mark removed when `clearMidRun`; returns them as they are afterwards, seq order.
 */
export async function userMessagesAfter(
  trx: Trx,
  tenantId: string,
  sessionId: string,
  seq: number,
  clearMidRun: boolean,
): Promise<Message[]> {
  if (clearMidRun) {
    await trx
      .updateTable('messages')
      .set({ info: sql`info - 'midRun'`, updated_at: sql<Date>`now()` })
      .where('session_id', '=', sessionId)
      .where('tenant_id', '=', tenantId)
      .where('role', '=', 'user')
      .where('reverted', '=', false)
      .where('seq', '>', seq)
      .where(sql<boolean>`info ? 'midRun'`)
      .execute();
  }
  const rows = await trx
    .selectFrom('messages')
    .select(['id', 'session_id', 'seq', 'info', 'reverted'])
    .where('session_id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .where('role', '=', 'user')
    .where('reverted', '=', false)
    .where('seq', '>', seq)
    .orderBy('seq')
    .execute();
  return rows.map(toMessage);
}
