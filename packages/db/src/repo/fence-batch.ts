import { CompiledQuery } from 'kysely';
import type { Db } from '../client.ts';
import type { SessionRow } from '../tables/session.table.ts';
import {
  type ChangedMessage,
  type ChangedPart,
  type FenceWithChanges,
  type FenceWithSnapshot,
  fenceWithChangesOf,
  fenceWithSnapshotOf,
} from './history-revision.ts';

// A step job's fence with its log, in ONE statement, for one session or for a batch of them (the
// worker's group commit, docs/decisions.md D41, D43). Per session, what the worker holds decides
// what is read with the fence: the changes since the revision of its cached log
// (acquireFenceWithSession + historyChangesSince(rev)), or, with no cached log (the session's first
// step on this worker), the whole log from the boundary (acquireFenceWithSession +
// loadHistorySnapshot). The fence goes up only if the row is still the version the statement's
// snapshot saw (`xmin`), so the log read from that snapshot is the log as of the row returned
// (docs/durability.md §3). It never waits for a row lock: a session whose row another transaction
// holds is skipped (SKIP LOCKED) and answers null, as a row written meanwhile does, and the caller
// then takes that fence apart (a plain fence, which waits, then the log). Why: the holder may be
// the session's previous runner, frozen or cut off in the middle of a transaction; a statement of
// the group commit that waited for it would hold up every other session's step on this worker. A
// statement that fails fails for all of its sessions (one transaction); the caller retries each
// alone.

export interface FenceRequest {
  tenantId: string;
  sessionId: string;
  /**
   * The revision of the worker's cached log: the changes after it come back. Absent when the
   * worker holds no log of the session: the whole log from the boundary comes back.
   */
  rev?: number | undefined;
}

/** A step's fence with its log: the changes (a revision was given), or the whole log (none was). */
export type StepFence = FenceWithChanges | FenceWithSnapshot;

/**
 * Above this many bytes (PostgreSQL's stored size of the rows) a statement stops aggregating whole
 * logs into its reply: counted over the batch's sessions in request order, a session whose log
 * would pass it gets its fence without the log, which it then reads on its own (row by row); a log
 * larger than the whole budget is left out of the count. One
 * aggregated value stays far below jsonb's 256 MiB limit, and a batch of first steps after a
 * restart cannot bring a worker hundreds of MiB in one reply.
 */
export const SNAPSHOT_WITH_FENCE_MAX_BYTES = 8 * 1024 * 1024;

// `f`: the fence bump of every session taken, each with its revision (`batch_since`, null for a
// whole log). Each session's rows are read by its own index scans; a CASE evaluates only the
// branch it takes.
const FENCES = `with input as (
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
  )`;

const CHANGES = `
    case when f.batch_since is not null then
      (select coalesce(jsonb_agg(jsonb_build_array(id, seq, info, reverted, rev) order by seq), '[]'::jsonb)
        from messages m where m.session_id = f.id and m.tenant_id = f.tenant_id and m.rev > f.batch_since)
    end as cm,
    case when f.batch_since is not null then
      (select coalesce(jsonb_agg(jsonb_build_array(id, message_id, seq, data, tokens, rev) order by seq), '[]'::jsonb)
        from parts p where p.session_id = f.id and p.tenant_id = f.tenant_id and p.rev > f.batch_since)
    end as cp`;

// A whole log: the live messages from the guarded row's boundary, and their parts.
const LIVE_MESSAGES = `messages m
        where m.session_id = f.id and m.tenant_id = f.tenant_id and m.reverted = false
          and (f.boundary_seq is null or m.seq >= f.boundary_seq)`;
const LIVE_PARTS = `messages m
        join parts p on p.message_id = m.id and p.session_id = m.session_id and p.tenant_id = m.tenant_id
        where m.session_id = f.id and m.tenant_id = f.tenant_id and m.reverted = false
          and (f.boundary_seq is null or m.seq >= f.boundary_seq)`;

/** Only cached sessions in the batch: their changes. */
const CHANGES_STATEMENT = `${FENCES}
  select f.*,${CHANGES}
  from f`;

/**
 * Some sessions without a cached log: `whole` is each one's stored size, `fits` the sessions whose
 * whole log stays within the statement's byte budget ($2), counted in request order; a log larger
 * than the whole budget is not counted, so it cannot crowd out the smaller ones behind it.
 */
const WHOLE_LOGS_STATEMENT = `${FENCES}, whole as (
    select f.id, f.batch_ord,
      (select coalesce(sum(pg_column_size(m.info)), 0) from ${LIVE_MESSAGES})
      + (select coalesce(sum(pg_column_size(p.data)), 0) from ${LIVE_PARTS}) as bytes
    from f where f.batch_since is null
  ), fits as (
    select id from (
      select id, bytes, sum(case when bytes <= $2::bigint then bytes else 0 end) over (order by batch_ord) as total
      from whole
    ) t where bytes <= $2::bigint and total <= $2::bigint
  )
  select f.*,${CHANGES},
    case when f.id in (select id from fits) then
      (select coalesce(jsonb_agg(jsonb_build_array(m.id, m.seq, m.info, false, m.rev) order by m.seq), '[]'::jsonb)
        from ${LIVE_MESSAGES})
    end as hm,
    case when f.id in (select id from fits) then
      (select coalesce(jsonb_agg(jsonb_build_array(p.id, p.message_id, p.seq, p.data, p.tokens, p.rev) order by p.seq), '[]'::jsonb)
        from ${LIVE_PARTS})
    end as hp
  from f`;

type Row = SessionRow & {
  cm: ChangedMessage[] | null;
  cp: ChangedPart[] | null;
  hm?: ChangedMessage[] | null;
  hp?: ChangedPart[] | null;
  batch_ord: number;
  batch_since: number | null;
};

/**
 * Step fences for one or several sessions in one statement that never waits for a row lock.
 * Outcomes in request order: the fence with the changes since `rev` (or with the whole log, absent
 * when it does not fit the statement's byte budget), or null (the row was held by another
 * transaction, written meanwhile, or is not this tenant's): then take the fence apart.
 */
export async function acquireStepFences(
  db: Db,
  requests: readonly FenceRequest[],
  maxBytes = SNAPSHOT_WITH_FENCE_MAX_BYTES,
): Promise<Array<StepFence | null>> {
  if (requests.length === 0) return [];
  if (new Set(requests.map((r) => r.sessionId)).size !== requests.length)
    throw new TypeError('a batch of fences holds one fence per session');
  const input = requests.map((r, ord) => ({
    ord,
    session_id: r.sessionId,
    tenant_id: r.tenantId,
    rev: r.rev ?? null,
  }));
  // Two texts, each prepared once per connection: the common case (every session cached) does not
  // plan the whole-log reads.
  const query = input.some((i) => i.rev === null)
    ? CompiledQuery.raw(WHOLE_LOGS_STATEMENT, [JSON.stringify(input), maxBytes])
    : CompiledQuery.raw(CHANGES_STATEMENT, [JSON.stringify(input)]);
  const { rows } = await db.executeQuery<Row>(query);
  const byOrd = new Map<number, Row>(rows.map((r) => [r.batch_ord, r]));
  return requests.map(({ sessionId, rev }, ord) => {
    const row = byOrd.get(ord);
    if (!row) return null;
    const { batch_ord: _ord, batch_since: _since, cm, cp, hm, hp, ...sessionRow } = row;
    return rev !== undefined
      ? fenceWithChangesOf({ ...sessionRow, cm: cm ?? [], cp: cp ?? [] }, sessionId, rev)
      : fenceWithSnapshotOf(sessionRow, hm && hp ? { hm, hp } : undefined, sessionId);
  });
}

/** acquireStepFences for one session with a cached log: its fence with the changes since `rev`, or null. */
export async function acquireFenceWithChanges(
  db: Db,
  tenantId: string,
  sessionId: string,
  rev: number,
): Promise<FenceWithChanges | null> {
  return (await acquireStepFences(db, [{ tenantId, sessionId, rev }]))[0] as FenceWithChanges | null;
}

/**
 * acquireStepFences for one session without a cached log: its fence with the whole log from the
 * boundary (absent above `maxBytes`: read it apart), or null.
 */
export async function acquireFenceWithSnapshot(
  db: Db,
  tenantId: string,
  sessionId: string,
  maxBytes = SNAPSHOT_WITH_FENCE_MAX_BYTES,
): Promise<FenceWithSnapshot | null> {
  return (await acquireStepFences(db, [{ tenantId, sessionId }], maxBytes))[0] as FenceWithSnapshot | null;
}
