import type { SessionKind, SessionStatus } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';

// The reconciler's reads (docs/durability.md §7): sessions and batches whose state says work is
// due while nothing moved for a while. They cross tenants on purpose (a system read, never reachable
// from a tenant's request) and never write: waking is the caller's job.

export interface StalledSession {
  tenantId: string;
  sessionId: string;
  status: SessionStatus;
  fence: number;
  kind: SessionKind;
  boundarySeq: number | null;
  /** The trace of its last fenced write (tracing on), which a wake continues. */
  traceparent: string | null;
}

interface StalledRow {
  id: string;
  tenant_id: string;
  status: SessionStatus;
  fence: number;
  kind: SessionKind;
  boundary_seq: number | null;
  traceparent: string | null;
}

const toStalled = (r: StalledRow): StalledSession => ({
  tenantId: r.tenant_id,
  sessionId: r.id,
  status: r.status,
  fence: r.fence,
  kind: r.kind,
  boundarySeq: r.boundary_seq,
  traceparent: r.traceparent,
});

export interface ListStalledSessionsOptions {
  /** Statuses in which a job or a lock holder should exist (queued, running, compacting). */
  statuses: readonly SessionStatus[];
  /** Untouched for at least this long, by PostgreSQL's clock (every fenced write bumps updated_at). */
  idleForMs: number;
  /** Only this tenant's sessions. */
  tenantId?: string;
  /** Default 500, at most 5,000: the oldest first, so a backlog is worked off over several runs. */
  limit?: number;
}

/** Sessions in one of `statuses` whose row has not changed for `idleForMs`, the stalest first. */
export async function listStalledSessions(
  db: Db,
  opts: ListStalledSessionsOptions,
): Promise<StalledSession[]> {
  if (opts.statuses.length === 0) return [];
  const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 500), 1), 5000);
  let query = db
    .selectFrom('sessions')
    .select(['id', 'tenant_id', 'status', 'fence', 'kind', 'boundary_seq', 'traceparent'])
    .where('status', 'in', [...opts.statuses])
    .where(
      'updated_at',
      '<',
      sql<Date>`now() - make_interval(secs => ${Math.max(0, opts.idleForMs) / 1000}::double precision)`,
    );
  if (opts.tenantId !== undefined) query = query.where('tenant_id', '=', opts.tenantId);
  const rows = await query.orderBy('updated_at', 'asc').orderBy('id', 'asc').limit(limit).execute();
  return rows.map(toStalled);
}

export interface ListStalledWaitingOptions {
  idleForMs: number;
  tenantId?: string;
  /** Default 500, at most 5,000, the stalest first. */
  limit?: number;
}

/**
 * `waiting` sessions untouched for `idleForMs` that something should wake: a recorded abort, a
 * running client call with a deadline, or a child that stopped. Legitimate waiting is never listed,
 * so it cannot crowd the others out of `limit`; the caller re-checks the log (deferredCalls).
 */
export async function listStalledWaitingSessions(
  db: Db,
  opts: ListStalledWaitingOptions,
): Promise<StalledSession[]> {
  const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 500), 1), 5000);
  const { rows } = await sql<StalledRow>`
    select s.id, s.tenant_id, s.status, s.fence, s.kind, s.boundary_seq, s.traceparent
    from sessions s
    where s.status = 'waiting'
      and s.updated_at < now() - make_interval(secs => ${Math.max(0, opts.idleForMs) / 1000}::double precision)
      ${opts.tenantId !== undefined ? sql`and s.tenant_id = ${opts.tenantId}` : sql``}
      and (s.abort_requested_seq is not null or exists (
        select 1 from messages m
        join parts p on p.message_id = m.id
        where m.session_id = s.id and m.role = 'assistant' and m.seq >= coalesce(s.boundary_seq, 0)
          and p.type = 'tool' and p.data->'state'->>'status' = 'running'
          and (
            (p.data->'state'->'metadata'->>'awaiting' = 'client'
              and p.data->'state'->'metadata' ? 'deadline')
            or (p.data->'state'->'metadata'->>'awaiting' = 'subagent'
              and not exists (
                select 1 from sessions c
                where c.id = p.data->'state'->'metadata'->>'childSessionId'
                  and c.tenant_id = s.tenant_id
                  and (c.status not in ('idle', 'error') or c.abort_requested_seq is not null))))))
    order by s.updated_at asc, s.id asc
    limit ${limit}`.execute(db);
  return rows.map(toStalled);
}

export interface StalledBatch {
  tenantId: string;
  batchId: string;
  /** Its unfinished items (status active), index order. */
  items: { index: number; sessionId: string }[];
  /** The trace of the request that created it (tracing on), which its re-added flow continues. */
  traceparent?: string;
}

/**
 * Batches still `running` that were created more than `olderThanMs` ago (so the gateway has
 * long added their flow), with their active items: the reconciler re-adds the flow of those whose
 * parent job Redis no longer has. Batches are few next to sessions: a scan of the running ones.
 */
export async function listRunningBatches(
  db: Db,
  opts: { olderThanMs: number; limit?: number },
): Promise<StalledBatch[]> {
  const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 100), 1), 1000);
  const batches = await db
    .selectFrom('batches')
    .select(['id', 'tenant_id', 'traceparent'])
    .where('status', '=', 'running')
    .where(
      'created_at',
      '<',
      sql<Date>`now() - make_interval(secs => ${Math.max(0, opts.olderThanMs) / 1000}::double precision)`,
    )
    .orderBy('created_at', 'asc')
    .limit(limit)
    .execute();
  if (batches.length === 0) return [];
  const items = await db
    .selectFrom('batch_items')
    .select(['batch_id', 'idx', 'session_id'])
    .where(
      'batch_id',
      'in',
      batches.map((b) => b.id),
    )
    .where('status', '=', 'active')
    .orderBy('batch_id')
    .orderBy('idx')
    .execute();
  return batches.map((b) => ({
    tenantId: b.tenant_id,
    batchId: b.id,
    items: items.filter((i) => i.batch_id === b.id).map((i) => ({ index: i.idx, sessionId: i.session_id })),
    ...(b.traceparent ? { traceparent: b.traceparent } : {}),
  }));
}
