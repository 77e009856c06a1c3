import type { Message, Part, WithParts } from '@loopline/core';
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../client.ts';
import type { MessageInfo } from '../tables/message.table.ts';
import type { PartData } from '../tables/part.table.ts';
import type { SessionRow } from '../tables/session.table.ts';
import { type SessionInfo, toMessage, toPart, toSession } from './mappers.ts';

// History with its revision, for the worker's session cache: every message and part row carries a
// trigger-stamped `rev` in commit order (migration 0011), and each read here is ONE snapshot (rows,
// last_seq, largest rev), so historyChangesSince(rev) continues without gaps (docs/durability.md §11).

export interface HistorySnapshot {
  /** The live log from `fromSeq` on (reverted rows left out), seq order; parts in part-seq order. */
  history: WithParts[];
  /** Every row returned has rev ≤ this; every later change of any row of the session has rev > this. */
  rev: number;
  /** sessions.last_seq in the same snapshot: a message with a larger seq was written after it. */
  lastSeq: number;
  /** Largest parts.seq per message (a part inserted later must come after them). */
  partSeq: Map<string, number>;
}

export interface PartChange {
  part: Part;
  /** parts.seq: the part's place in its message. */
  seq: number;
}

export interface HistoryChanges {
  /** Messages inserted or updated since the revision (reverted ones too, with `reverted`), seq order. */
  messages: Message[];
  /** Parts inserted or updated since the revision (of any message of the session), part-seq order. */
  parts: PartChange[];
  rev: number;
  lastSeq: number;
}

interface Row {
  k: 'm' | 'p' | 's';
  id: string | null;
  message_id: string | null;
  seq: number;
  data: unknown;
  reverted: boolean;
  tokens: number;
  rev: number;
}

function session(tenantId: string, sessionId: string): RawBuilder<unknown> {
  return sql`select 's' as k, null::text as id, null::text as message_id, last_seq as seq, null::jsonb as data,
      false as reverted, 0 as tokens, 0::bigint as rev
    from sessions where id = ${sessionId} and tenant_id = ${tenantId}`;
}

/**
 * The log from `fromSeq` on (as loadHistory) with its revision, in one statement. Undefined when
 * the session is not this tenant's (or gone).
 */
export async function loadHistorySnapshot(
  db: Db,
  tenantId: string,
  sessionId: string,
  fromSeq: number | null,
): Promise<HistorySnapshot | undefined> {
  const from = fromSeq === null ? sql`` : sql` and seq >= ${fromSeq}`;
  const { rows } = await sql<Row>`
    with m as (
      select id, seq, info, rev from messages
      where session_id = ${sessionId} and tenant_id = ${tenantId} and reverted = false${from}
    )
    select 'm' as k, m.id, null::text as message_id, m.seq, m.info as data, false as reverted, 0 as tokens, m.rev
      from m
    union all
    select 'p', p.id, p.message_id, p.seq, p.data, false, p.tokens, p.rev from parts p
      where p.tenant_id = ${tenantId} and p.session_id = ${sessionId} and p.message_id = any(array(select id from m))
    union all
    ${session(tenantId, sessionId)}
    order by 1, 4`.execute(db);
  const last = rows.at(-1);
  if (last?.k !== 's') return undefined;
  return snapshotOf(rows, sessionId, last.seq);
}

/** A snapshot from its message ('m') and part ('p') rows, in seq order (messages before parts). */
function snapshotOf(rows: Row[], sessionId: string, lastSeq: number): HistorySnapshot {
  let rev = 0;
  const history: WithParts[] = [];
  const byId = new Map<string, WithParts>();
  const partSeq = new Map<string, number>();
  for (const row of rows) {
    if (row.rev > rev) rev = row.rev;
    if (row.k === 'm') {
      const message = { info: messageOf(row, sessionId), parts: [] as Part[] };
      history.push(message);
      byId.set(row.id!, message);
    } else if (row.k === 'p') {
      const message = byId.get(row.message_id!);
      if (!message) continue;
      message.parts.push(partOf(row, sessionId));
      partSeq.set(row.message_id!, row.seq);
    }
  }
  return { history, rev, lastSeq, partSeq };
}

/**
 * Every message and part of the session written (inserted or updated) after revision `rev`, in
 * one statement: what a history loaded at `rev` needs to equal a fresh load. Undefined when the
 * session is not this tenant's (or gone).
 */
export async function historyChangesSince(
  db: Db,
  tenantId: string,
  sessionId: string,
  rev: number,
): Promise<HistoryChanges | undefined> {
  const { rows } = await sql<Row>`
    select 'm' as k, id, null::text as message_id, seq, info as data, reverted, 0 as tokens, rev from messages
      where session_id = ${sessionId} and tenant_id = ${tenantId} and rev > ${rev}
    union all
    select 'p', id, message_id, seq, data, false, tokens, rev from parts
      where session_id = ${sessionId} and tenant_id = ${tenantId} and rev > ${rev}
    union all
    ${session(tenantId, sessionId)}
    order by 1, 4`.execute(db);
  const last = rows.at(-1);
  if (last?.k !== 's') return undefined;
  let max = rev;
  const messages: Message[] = [];
  const parts: PartChange[] = [];
  for (const row of rows) {
    if (row.rev > max) max = row.rev;
    if (row.k === 'm') messages.push(messageOf(row, sessionId));
    else if (row.k === 'p') parts.push({ part: partOf(row, sessionId), seq: row.seq });
  }
  return { messages, parts, rev: max, lastSeq: last.seq };
}

/** What acquireFenceWithChanges returns for a session. */
export interface FenceWithChanges {
  fence: number;
  session: SessionInfo;
  changes: HistoryChanges;
}

/** The session row the fence statement returned, with its changed messages and parts (cm, cp). */
export function fenceWithChangesOf(
  row: SessionRow & { cm: ChangedMessage[]; cp: ChangedPart[] },
  sessionId: string,
  rev: number,
): FenceWithChanges {
  const { cm, cp, ...sessionRow } = row;
  let max = rev;
  const messages: Message[] = [];
  const parts: PartChange[] = [];
  for (const [id, seq, info, reverted, r] of cm) {
    if (r > max) max = r;
    messages.push(
      messageOf({ k: 'm', id, message_id: null, seq, data: info, reverted, tokens: 0, rev: r }, sessionId),
    );
  }
  for (const [id, messageId, seq, data, tokens, r] of cp) {
    if (r > max) max = r;
    const part = partOf(
      { k: 'p', id, message_id: messageId, seq, data, reverted: false, tokens, rev: r },
      sessionId,
    );
    parts.push({ part, seq });
  }
  const session = toSession(sessionRow as SessionRow);
  return { fence: session.fence, session, changes: { messages, parts, rev: max, lastSeq: session.lastSeq } };
}

/** What acquireFenceWithSnapshot returns for a session: `snapshot` absent when it did not fit. */
export interface FenceWithSnapshot {
  fence: number;
  session: SessionInfo;
  snapshot?: HistorySnapshot;
}

/** The session row the fence statement returned, with its whole log aggregated (hm, hp) if it fit. */
export function fenceWithSnapshotOf(
  sessionRow: SessionRow,
  log: { hm: ChangedMessage[]; hp: ChangedPart[] } | undefined,
  sessionId: string,
): FenceWithSnapshot {
  const session = toSession(sessionRow);
  if (!log) return { fence: session.fence, session };
  const rows: Row[] = [];
  for (const [id, seq, data, reverted, rev] of log.hm)
    rows.push({ k: 'm', id, message_id: null, seq, data, reverted, tokens: 0, rev });
  for (const [id, messageId, seq, data, tokens, rev] of log.hp)
    rows.push({ k: 'p', id, message_id: messageId, seq, data, reverted: false, tokens, rev });
  return { fence: session.fence, session, snapshot: snapshotOf(rows, sessionId, session.lastSeq) };
}

export type ChangedMessage = [id: string, seq: number, info: unknown, reverted: boolean, rev: number];
export type ChangedPart = [
  id: string,
  messageId: string,
  seq: number,
  data: unknown,
  tokens: number,
  rev: number,
];

function messageOf(row: Row, sessionId: string): Message {
  return toMessage({
    id: row.id!,
    session_id: sessionId,
    seq: row.seq,
    info: row.data as MessageInfo,
    reverted: row.reverted,
  });
}

function partOf(row: Row, sessionId: string): Part {
  return toPart({
    id: row.id!,
    session_id: sessionId,
    message_id: row.message_id!,
    data: row.data as PartData,
    tokens: row.tokens,
  });
}
