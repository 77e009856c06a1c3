import type { SessionKind, SessionStatus } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';

// The reconciler's read (apps/worker/src/reconcile.ts): sessions of every tenant (or one) whose
// status says work is due while their row has not changed for a while. Like the operator reads
// (operator.ts) it crosses tenants on purpose, behind an optional tenant filter; it is a system
// read, never reachable from a tenant's request. Read-only: waking is the caller's job.

export interface StalledSession {
  tenantId: string;
  sessionId: string;
  status: SessionStatus;
  fence: number;
  kind: SessionKind;
  boundarySeq: number | null;
}

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
    .select(['id', 'tenant_id', 'status', 'fence', 'kind', 'boundary_seq'])
    .where('status', 'in', [...opts.statuses])
    .where(
      'updated_at',
      '<',
      sql<Date>`now() - make_interval(secs => ${Math.max(0, opts.idleForMs) / 1000}::double precision)`,
    );
  if (opts.tenantId !== undefined) query = query.where('tenant_id', '=', opts.tenantId);
  const rows = await query.orderBy('updated_at', 'asc').orderBy('id', 'asc').limit(limit).execute();
  return rows.map((r) => ({
    tenantId: r.tenant_id,
    sessionId: r.id,
    status: r.status,
    fence: r.fence,
    kind: r.kind,
    boundarySeq: r.boundary_seq,
  }));
}
