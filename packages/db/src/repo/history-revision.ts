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

/**
 * Above this many bytes (PostgreSQL's stored size of the rows) acquireFenceWithSnapshot returns the
 * fence without the log, which is then read on its own: one aggregated value stays far below
 * jsonb's 256 MiB limit, and a long log keeps loadHistorySnapshot's row-by-row transfer.
 */
export const SNAPSHOT_WITH_FENCE_MAX_BYTES = 8 * 1024 * 1024;

/**
 * acquireFenceWithSession and loadHistorySnapshot(from the session's boundary) in ONE statement,
 * for a job whose worker has no cached log of the session (its first step there). Null when the
 * row changed while the statement waited for its lock (or is gone): then take them apart. Unlike
 * acquireFenceWithChanges (fence-batch.ts) it waits for a held row: it is never group-committed. `snapshot` is absent when the log is larger
 * than `maxBytes` (the fence is taken; the caller reads the log on its own).
 */
export async function acquireFenceWithSnapshot(
  db: Db,
  tenantId: string,
  sessionId: string,
  maxBytes = SNAPSHOT_WITH_FENCE_MAX_BYTES,
): Promise<{ fence: number; session: SessionInfo; snapshot?: HistorySnapshot } | null> {
  // The row as the statement's snapshot sees it: its xmin guards the update (a newer version fails
  // it, so the log read below and the row returned are of the same moment), its boundary_seq
  // starts the log.
  const { rows } = await sql<SessionRow & { hm: ChangedMessage[] | null; hp: ChangedPart[] | null }>`
    with snap as (
      select xmin, boundary_seq from sessions where id = ${sessionId} and tenant_id = ${tenantId}
    ),
    f as (
      update sessions set fence = fence + 1, updated_at = now()
      where id = ${sessionId} and tenant_id = ${tenantId} and xmin = (select xmin from snap)
      returning *
    ),
    m as (
      select id, seq, info, rev from messages
      where session_id = ${sessionId} and tenant_id = ${tenantId} and reverted = false
        and ((select boundary_seq from snap) is null or seq >= (select boundary_seq from snap))
    ),
    p as (
      select id, message_id, seq, data, tokens, rev from parts
      where tenant_id = ${tenantId} and session_id = ${sessionId} and message_id = any(array(select id from m))
    ),
    fits as (
      select coalesce((select sum(pg_column_size(info)) from m), 0)
        + coalesce((select sum(pg_column_size(data)) from p), 0) <= ${maxBytes} as ok
    )
    select f.*,
      case when (select ok from fits) then
        (select coalesce(jsonb_agg(jsonb_build_array(id, seq, info, false, rev) order by seq), '[]'::jsonb) from m)
      end as hm,
      case when (select ok from fits) then
        (select coalesce(jsonb_agg(jsonb_build_array(id, message_id, seq, data, tokens, rev) order by seq), '[]'::jsonb) from p)
      end as hp
    from f`.execute(db);
  const row = rows[0];
  if (!row) return null;
  const { hm, hp, ...sessionRow } = row;
  const session = toSession(sessionRow as SessionRow);
  if (!hm || !hp) return { fence: session.fence, session };
  const snapRows: Row[] = [];
  for (const [id, seq, data, reverted, rev] of hm)
    snapRows.push({ k: 'm', id, message_id: null, seq, data, reverted, tokens: 0, rev });
  for (const [id, messageId, seq, data, tokens, rev] of hp)
    snapRows.push({ k: 'p', id, message_id: messageId, seq, data, reverted: false, tokens, rev });
  return { fence: session.fence, session, snapshot: snapshotOf(snapRows, sessionId, session.lastSeq) };
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
