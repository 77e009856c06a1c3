import type { Part, WithParts } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';
import type { MessageRow } from '../tables/message.table.ts';
import { toMessage, toPart } from './mappers.ts';

// Reading history: messages by seq, then all their parts in a second query (never N+1).
// Both queries are index range scans (messages_session_seq_idx, parts_message_idx), so loading
// from the session's boundary costs O(messages since the boundary), not O(all messages).

export interface LoadHistoryOptions {
  /** First seq to load (inclusive), typically the session's boundarySeq; null/absent = from the start. */
  fromSeq?: number | null;
  /** Stop before this seq (exclusive), e.g. the frozen range of a compaction. */
  beforeSeq?: number | null;
  /** Include messages hidden by a revert (default false). */
  includeReverted?: boolean;
  /** Only the newest N messages of the range (still returned oldest first). */
  last?: number;
  /** Only the oldest N messages of the range (ignored with `last`). */
  first?: number;
  /**
   * Only parts of these types (every message still comes, with those of its parts): for a reader
   * of the log's shape, e.g. a revert's plan, which needs compaction parts and no tool output.
   */
  partTypes?: readonly Part['type'][];
}

type MessageColumns = Pick<MessageRow, 'id' | 'session_id' | 'seq' | 'info' | 'reverted'>;

/** A session's messages with their parts, oldest first (the range in `opts`). */
export async function loadHistory(
  db: Db,
  tenantId: string,
  sessionId: string,
  opts: LoadHistoryOptions = {},
): Promise<WithParts[]> {
  const query = historyQuery(db, tenantId, sessionId, opts);
  const rows = opts.last !== undefined ? (await query.execute()).reverse() : await query.execute();
  return withParts(db, tenantId, sessionId, rows, opts.partTypes);
}

/** The messages query of loadHistory (exported so a test can EXPLAIN it). */
export function historyQuery(db: Db, tenantId: string, sessionId: string, opts: LoadHistoryOptions = {}) {
  let query = db
    .selectFrom('messages')
    .select(['id', 'session_id', 'seq', 'info', 'reverted'])
    .where('session_id', '=', sessionId)
    .where('tenant_id', '=', tenantId);
  if (opts.fromSeq !== undefined && opts.fromSeq !== null) query = query.where('seq', '>=', opts.fromSeq);
  if (opts.beforeSeq !== undefined && opts.beforeSeq !== null)
    query = query.where('seq', '<', opts.beforeSeq);
  if (!opts.includeReverted) query = query.where('reverted', '=', false);
  if (opts.last !== undefined) return query.orderBy('seq', 'desc').limit(opts.last);
  return opts.first !== undefined ? query.orderBy('seq').limit(opts.first) : query.orderBy('seq');
}

/** The parts query for a set of messages (exported so a test can EXPLAIN it). */
export function partsQuery(
  db: Db,
  tenantId: string,
  sessionId: string,
  messageIds: readonly string[],
  types?: readonly Part['type'][],
) {
  const query = db
    .selectFrom('parts')
    .select(['id', 'session_id', 'message_id', 'data', 'tokens'])
    .where('tenant_id', '=', tenantId)
    .where('session_id', '=', sessionId)
    .where('message_id', '=', sql<string>`any(${sql.val([...messageIds])}::text[])`);
  return (
    types ? query.where('type', '=', sql<Part['type']>`any(${sql.val([...types])}::text[])`) : query
  ).orderBy('seq');
}

/** Attaches each message's parts (ordered by part seq) with one query. */
export async function withParts(
  db: Db,
  tenantId: string,
  sessionId: string,
  rows: readonly MessageColumns[],
  partTypes?: readonly Part['type'][],
): Promise<WithParts[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const partRows = await partsQuery(db, tenantId, sessionId, ids, partTypes).execute();
  const byMessage = new Map<string, Part[]>(ids.map((id) => [id, []]));
  for (const row of partRows) byMessage.get(row.message_id)?.push(toPart(row));
  return rows.map((row) => ({ info: toMessage(row), parts: byMessage.get(row.id) ?? [] }));
}
