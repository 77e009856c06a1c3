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

/**
 * Most sessions one page reads when it filters on what the index does not hold (status, agent,
 * metadata): past them the page ends early, with the cursor where its reading stopped. Without the
 * bound a filter that matches nothing walked (and detoasted) every session of the tenant.
 */
export const LIST_SCAN_MAX = 5_000;

/** One page of the tenant's sessions after the cursor (keyset on created_at, id), with the next cursor. */
export async function listSessionPage(
  db: Db,
  tenantId: string,
  filter: SessionFilter,
  opts: { limit: number; after?: SessionCursor; scanMax?: number },
): Promise<SessionPage> {
  // The range the index (tenant_id, created_at, id) reads in order: tenant, dates, cursor, parent.
  let range = db
    .selectFrom('sessions')
    .select(LIST_COLUMNS)
    .select(sql<string>`created_at::text`.as('created_key'))
    .where('tenant_id', '=', tenantId);
  if (filter.createdAfter) range = range.where('created_at', '>', filter.createdAfter);
  if (filter.createdBefore) range = range.where('created_at', '<', filter.createdBefore);
  if (filter.parentSessionId !== undefined)
    range = range.where('parent_session_id', '=', filter.parentSessionId);
  if (opts.after)
    range = range.where(
      sql<boolean>`(created_at, id) < (${opts.after.createdAt}::timestamptz, ${opts.after.id})`,
    );
  range = range.orderBy('created_at', 'desc').orderBy('id', 'desc');
  const metadata = filter.metadata && Object.keys(filter.metadata).length > 0 ? filter.metadata : undefined;
  const statuses = filter.statuses && filter.statuses.length > 0 ? filter.statuses : undefined;
  const scanMax = opts.scanMax ?? LIST_SCAN_MAX;
  const filtered = statuses !== undefined || filter.agent !== undefined || metadata !== undefined;
  let rows: Awaited<ReturnType<typeof range.execute>>;
  if (!filtered) rows = await range.limit(opts.limit + 1).execute();
  else {
    // The filters apply to at most scanMax sessions of the range, read in order.
    let page = db.selectFrom(range.limit(scanMax).as('s')).selectAll();
    if (statuses) page = page.where('status', 'in', [...statuses]);
    if (filter.agent !== undefined) page = page.where('agent_name', '=', filter.agent);
    if (metadata) page = page.where(sql<boolean>`metadata @> ${JSON.stringify(metadata)}::jsonb`);
    rows = await page
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(opts.limit + 1)
      .execute();
  }
  const page = rows.slice(0, opts.limit);
  const last = page.at(-1);
  if (rows.length > opts.limit && last)
    return { sessions: page.map(listItem), next: { createdAt: last.created_key, id: last.id } };
  if (filtered) {
    // A short page: when the read stopped at its bound, the next page starts after its last row.
    const edge = await db
      .selectFrom(
        range
          .clearSelect()
          .select(['id', sql<string>`created_at::text`.as('created_key')])
          .offset(scanMax - 1)
          .limit(1)
          .as('e'),
      )
      .selectAll()
      .executeTakeFirst();
    if (edge) return { sessions: page.map(listItem), next: { createdAt: edge.created_key, id: edge.id } };
  }
  return { sessions: page.map(listItem) };
}

function listItem({
  created_key: _key,
  ...row
}: { created_key: string } & Parameters<typeof toSessionListItem>[0]) {
  return toSessionListItem(row);
}
