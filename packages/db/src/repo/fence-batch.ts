import { CompiledQuery } from 'kysely';
import type { Db } from '../client.ts';
import type { SessionRow } from '../tables/session.table.ts';
import {
  type ChangedMessage,
  type ChangedPart,
  type FenceWithChanges,
  fenceWithChangesOf,
} from './history-revision.ts';

// A step job's fence with its log's changes (acquireFenceWithSession and historyChangesSince(rev)
// in ONE statement), for one session or for a batch of them (the worker's group commit,
// docs/decisions.md D41). Per session: the fence goes up only if the row is still the version the
// statement's snapshot saw (`xmin`), so the changes read from that snapshot are the log as of the
// row returned (docs/durability.md §3). It never waits for a row lock: a session whose row another
// transaction holds is skipped (SKIP LOCKED) and answers null, as a row written meanwhile does,
// and the caller then takes that fence apart (a plain fence, which waits, then the log). Why: the
// holder may be the session's previous runner, frozen or cut off in the middle of a transaction;
// a statement of the group commit that waited for it would hold up every other session's step on
// this worker. A statement that fails fails for all of its sessions (one transaction); the caller
// retries each alone.

export interface FenceRequest {
  tenantId: string;
  sessionId: string;
  /** The revision of the worker's cached log: changes after it come back. */
  rev: number;
}

const STATEMENT = `with input as (
    select * from jsonb_to_recordset($1::jsonb) as i(ord int, session_id text, tenant_id text, rev bigint)
  ), snap as (
    select s.id, s.xmin from sessions s
    join input i on s.id = i.session_id and s.tenant_id = i.tenant_id
  ), locked as (
    select s.id from sessions s
    join input i on s.id = i.session_id and s.tenant_id = i.tenant_id
    order by s.id
    for no key update of s skip locked
  ), f as (
    update sessions s set fence = s.fence + 1, updated_at = now()
    from input i join snap on snap.id = i.session_id
    where s.id = i.session_id and s.tenant_id = i.tenant_id and s.xmin = snap.xmin
      and s.id in (select id from locked)
    returning s.*, i.ord as batch_ord, i.rev as batch_since
  )
  select f.*,
    (select coalesce(jsonb_agg(jsonb_build_array(id, seq, info, reverted, rev) order by seq), '[]'::jsonb)
      from messages m where m.session_id = f.id and m.tenant_id = f.tenant_id and m.rev > f.batch_since) as cm,
    (select coalesce(jsonb_agg(jsonb_build_array(id, message_id, seq, data, tokens, rev) order by seq), '[]'::jsonb)
      from parts p where p.session_id = f.id and p.tenant_id = f.tenant_id and p.rev > f.batch_since) as cp
  from f`;

type Row = SessionRow & { cm: ChangedMessage[]; cp: ChangedPart[]; batch_ord: number; batch_since: number };

/**
 * acquireFenceWithChanges for one or several sessions in one statement that never waits for a row
 * lock. Outcomes in request order: the fence with the changes, or null (the row was held by
 * another transaction, written meanwhile, or is not this tenant's): then take the fence apart.
 */
export async function acquireFencesWithChanges(
  db: Db,
  requests: readonly FenceRequest[],
): Promise<Array<FenceWithChanges | null>> {
  if (requests.length === 0) return [];
  if (new Set(requests.map((r) => r.sessionId)).size !== requests.length)
    throw new TypeError('a batch of fences holds one fence per session');
  const input = requests.map((r, ord) => ({
    ord,
    session_id: r.sessionId,
    tenant_id: r.tenantId,
    rev: r.rev,
  }));
  const { rows } = await db.executeQuery<Row>(CompiledQuery.raw(STATEMENT, [JSON.stringify(input)]));
  const byOrd = new Map<number, Row>(rows.map((r) => [r.batch_ord, r]));
  return requests.map(({ sessionId, rev }, ord) => {
    const row = byOrd.get(ord);
    if (!row) return null;
    const { batch_ord: _ord, batch_since: _since, ...sessionRow } = row;
    return fenceWithChangesOf(sessionRow, sessionId, rev);
  });
}

/** acquireFencesWithChanges for one session: its fence with the changes since `rev`, or null. */
export async function acquireFenceWithChanges(
  db: Db,
  tenantId: string,
  sessionId: string,
  rev: number,
): Promise<FenceWithChanges | null> {
  return (await acquireFencesWithChanges(db, [{ tenantId, sessionId, rev }]))[0] ?? null;
}
