import type { SessionStatus } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';
import { type SessionInfo, toSession } from './mappers.ts';

// GET /v1/sessions: a tenant's sessions, newest first, filtered, a page at a time. The cursor's
// created_at travels as PostgreSQL prints it (microseconds): a JS Date would round it to
// milliseconds and skip or repeat rows created in the same millisecond.

export interface SessionCursor {
  /** created_at as PostgreSQL text, e.g. 2026-05-01 10:00:00.123456+00. */
  createdAt: string;
  id: string;
}

export interface SessionFilter {
  statuses?: readonly SessionStatus[];
  agent?: string;
  /** JSON containment (metadata @> this): every key given must be equal. */
  metadata?: Record<string, unknown>;
  createdAfter?: Date;
  createdBefore?: Date;
  parentSessionId?: string;
}

export interface SessionPage {
  sessions: SessionInfo[];
  /** Cursor of the next page; undefined on the last page. */
  next?: SessionCursor;
}

/** Matches what PostgreSQL prints for a timestamptz, the only created_at a cursor may carry. */
export const CURSOR_TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:\d{2})?$/;

/** One page of the tenant's sessions after the cursor (keyset on created_at, id), with the next cursor. */
export async function listSessionPage(
  db: Db,
  tenantId: string,
  filter: SessionFilter,
  opts: { limit: number; after?: SessionCursor },
): Promise<SessionPage> {
  let query = db
    .selectFrom('sessions')
    .selectAll()
    .select(sql<string>`created_at::text`.as('created_key'))
    .where('tenant_id', '=', tenantId);
  if (filter.statuses && filter.statuses.length > 0)
    query = query.where('status', 'in', [...filter.statuses]);
  if (filter.agent !== undefined) query = query.where('agent_name', '=', filter.agent);
  if (filter.metadata && Object.keys(filter.metadata).length > 0)
    query = query.where(sql<boolean>`metadata @> ${JSON.stringify(filter.metadata)}::jsonb`);
  if (filter.createdAfter) query = query.where('created_at', '>', filter.createdAfter);
  if (filter.createdBefore) query = query.where('created_at', '<', filter.createdBefore);
  if (filter.parentSessionId !== undefined)
    query = query.where('parent_session_id', '=', filter.parentSessionId);
  if (opts.after)
    query = query.where(
      sql<boolean>`(created_at, id) < (${opts.after.createdAt}::timestamptz, ${opts.after.id})`,
    );
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1)
    .execute();
  const page = rows.slice(0, opts.limit);
  const last = page.at(-1);
  return {
    sessions: page.map(({ created_key: _key, ...row }) => toSession(row)),
    ...(rows.length > opts.limit && last ? { next: { createdAt: last.created_key, id: last.id } } : {}),
  };
}
