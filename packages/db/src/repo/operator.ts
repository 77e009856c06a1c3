import type { SessionStatus } from '@loopline/core';
import type { Db } from '../client.ts';
import { type SessionInfo, toSession } from './mappers.ts';

// Operator reads across tenants (the session inspector behind the operator token). Read-only;
// every tenant-facing read stays tenant-scoped in the other repositories.

export interface OperatorSession extends SessionInfo {
  tenantName: string;
}

export interface ListSessionsAllTenantsOptions {
  /** Only this tenant's sessions. */
  tenantId?: string;
  status?: SessionStatus;
  /** Default 50, at most 500. */
  limit?: number;
}

/**
 * Sessions of every tenant (or one), most recently updated first, with their tenant's name. For
 * operators picking a session: a bounded sort over the sessions table, not a hot path.
 */
export async function listSessionsAllTenants(
  db: Db,
  opts: ListSessionsAllTenantsOptions = {},
): Promise<OperatorSession[]> {
  const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 50), 1), 500);
  let query = db
    .selectFrom('sessions as s')
    .innerJoin('tenants as t', 't.id', 's.tenant_id')
    .selectAll('s')
    .select('t.name as tenant_name');
  if (opts.tenantId !== undefined) query = query.where('s.tenant_id', '=', opts.tenantId);
  if (opts.status !== undefined) query = query.where('s.status', '=', opts.status);
  const rows = await query.orderBy('s.updated_at', 'desc').orderBy('s.id', 'desc').limit(limit).execute();
  return rows.map(({ tenant_name, ...row }) => ({ ...toSession(row), tenantName: tenant_name }));
}

/** A session by id whatever its tenant (operators only), with its tenant's name. */
export async function getSessionAnyTenant(db: Db, sessionId: string): Promise<OperatorSession | undefined> {
  const row = await db
    .selectFrom('sessions as s')
    .innerJoin('tenants as t', 't.id', 's.tenant_id')
    .selectAll('s')
    .select('t.name as tenant_name')
    .where('s.id', '=', sessionId)
    .executeTakeFirst();
  if (!row) return undefined;
  const { tenant_name, ...session } = row;
  return { ...toSession(session), tenantName: tenant_name };
}
