import type { SessionStatus } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';
import { type SessionListItem, toSessionListItem } from './mappers.ts';

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
  /** Without their agent configs (up to the request body limit each): a page reads none of them. */
  sessions: SessionListItem[];
  /** Cursor of the next page; undefined on the last page. */
  next?: SessionCursor;
}

/** Every column of a session but its agent config (and its trace context). */
const LIST_COLUMNS = [
  'id',
  'tenant_id',
  'agent_name',
  'status',
  'status_detail',
  'fence',
  'last_seq',
  'step_count',
  'boundary_seq',
  'last_usage',
  'token_ratio',
  'token_ratio_weight',
  'compaction_count',
  'last_compaction_at',
  'error',
  'title',
  'parent_session_id',
  'metadata',
  'abort_requested_seq',
  'kind',
  'created_at',
  'updated_at',
] as const;

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
    .select(LIST_COLUMNS)
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
    sessions: page.map(({ created_key: _key, ...row }) => toSessionListItem(row)),
    ...(rows.length > opts.limit && last ? { next: { createdAt: last.created_key, id: last.id } } : {}),
  };
}
