import {
  type AssistantMessage,
  type Message,
  type NewPart,
  newId,
  type Part,
  type UserMessage,
  type WithParts,
} from '@loopline/core';
import { sql } from 'kysely';
import type { Db, Trx } from '../client.ts';
import { NotFoundError } from '../errors.ts';
import { toJson } from '../tables/columns.ts';
import { withParts } from './history.ts';
import { messageInfo, toMessage } from './mappers.ts';
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
}

/** Creates an assistant message, or returns the existing one with this id. */
export async function createAssistantMessage(
  trx: Trx,
  input: CreateAssistantMessageInput,
): Promise<AssistantMessage> {
  if (input.id) {
    const existing = await getMessageInfo(trx, input.tenantId, input.sessionId, input.id);
    if (existing) return asAssistant(existing);
  }
  const seq = await allocateSeq(trx, input.tenantId, input.sessionId);
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
  if (!(await insertMessage(trx, input.tenantId, info))) {
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

/** Hides every message from `fromSeq` on from the model (CONTEXT.md §7); returns how many were marked. */
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
