import type { SessionStatus } from '@loopline/core';
import { CURSOR_TIMESTAMP, listSessionPage, type SessionCursor, type SessionListItem } from '@loopline/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { HttpError } from '../lib/http-error.ts';
import { deleteSession } from '../lib/session-delete.ts';
import { iso, loadSession } from '../lib/sessions.ts';
import { tenantOf } from '../plugins/auth.ts';
import {
  ChildrenQuery,
  DeletedSession,
  DeleteSessionQuery,
  ListSessionsQuery,
  SessionList,
  type SessionSummary,
} from '../schemas/session-list.ts';
import { IdParam, withErrors } from '../schemas/shared.ts';

// Listing sessions (newest first, filtered, cursor pages), a session's children (subagents) and
// deleting a session with all its data.

const tags = ['sessions'];

/** The list view of a session. */
export function summary(s: SessionListItem): SessionSummary {
  return {
    id: s.id,
    agent: s.agentName,
    kind: s.kind,
    status: s.status,
    statusDetail: s.statusDetail,
    error: s.error,
    title: s.title,
    stepCount: s.stepCount,
    parentSessionId: s.parentSessionId,
    metadata: s.metadata,
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
  };
}

/** The opaque cursor: base64url of [created_at as PostgreSQL prints it, id]. */
const encodeCursor = (c: SessionCursor): string =>
  Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url');

function decodeCursor(text: string | undefined): SessionCursor | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      CURSOR_TIMESTAMP.test(value[0]) &&
      typeof value[1] === 'string' &&
      value[1].length <= 128
    )
      return { createdAt: value[0], id: value[1] };
  } catch {
    // reported below
  }
  throw new HttpError('validation_error', 'cursor is not a cursor this API handed out', {
    in: 'querystring',
    issues: [{ path: '/cursor', message: 'use nextCursor of the previous page' }],
  });
}

/** GET /sessions (list), GET /sessions/:id/children, DELETE /sessions/:id. */
export const sessionListRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;

  app.get(
    '/sessions',
    {
      schema: {
        tags,
        summary: 'List sessions (newest first, filtered, paginated)',
        description:
          'Sessions of the tenant, newest first. Filters combine (AND): status (comma-separated), agent, ' +
          'metadata (a JSON object the session metadata must contain, e.g. {"userId":"u-42"}), parent (child ' +
          'sessions of a session), createdAfter/createdBefore. Pages hold `limit` sessions; pass nextCursor ' +
          'as ?cursor= with the same filters for the next page (null on the last one). With a status, agent ' +
          'or metadata filter a page reads at most 5,000 sessions, so it may hold fewer than `limit` (even ' +
          'none) and still have a nextCursor: follow it until it is null.',
        querystring: ListSessionsQuery,
        response: withErrors({ 200: SessionList }),
      },
    },
    async (request) => {
      const q = request.query;
      const page = await listSessionPage(
        deps.db,
        tenantOf(request).id,
        {
          ...(q.status ? { statuses: q.status.split(',') as SessionStatus[] } : {}),
          ...(q.agent ? { agent: q.agent } : {}),
          ...(q.metadata ? { metadata: JSON.parse(q.metadata) as Record<string, unknown> } : {}),
          ...(q.parent ? { parentSessionId: q.parent } : {}),
          ...(q.createdAfter ? { createdAfter: new Date(q.createdAfter) } : {}),
          ...(q.createdBefore ? { createdBefore: new Date(q.createdBefore) } : {}),
        },
        { limit: q.limit, ...(q.cursor ? { after: decodeCursor(q.cursor)! } : {}) },
      );
      return { sessions: page.sessions.map(summary), nextCursor: page.next ? encodeCursor(page.next) : null };
    },
  );

  app.get(
    '/sessions/:id/children',
    {
      schema: {
        tags,
        summary: 'Child sessions (subagents) of a session',
        description:
          "Sessions started by this session's task tool, newest first, paginated like GET /v1/sessions. Each " +
          'shows its parentSessionId.',
        params: IdParam,
        querystring: ChildrenQuery,
        response: withErrors({ 200: SessionList }),
      },
    },
    async (request) => {
      const tenantId = tenantOf(request).id;
      const parent = await loadSession(deps, tenantId, request.params.id);
      const page = await listSessionPage(
        deps.db,
        tenantId,
        { parentSessionId: parent.id },
        {
          limit: request.query.limit,
          ...(request.query.cursor ? { after: decodeCursor(request.query.cursor)! } : {}),
        },
      );
      return { sessions: page.sessions.map(summary), nextCursor: page.next ? encodeCursor(page.next) : null };
    },
  );

  app.delete(
    '/sessions/:id',
    {
      schema: {
        tags,
        summary: 'Delete a session and all its data',
        description:
          'For data-deletion requests: removes the session, its messages and parts, stored tool outputs, steps, ' +
          'compaction records, idempotency records, its event stream and its queued jobs, and the same for ' +
          'every child session (subagent) below it. 409 session_busy while it (or a child) is working, unless ' +
          '?force=true, which aborts the turn first and waits for it to stop; 409 batch_running for a ' +
          'conversation of a batch that is still running (cancel the batch first). Nothing is deleted on an ' +
          'error. The deletion cannot be undone.',
        params: IdParam,
        querystring: DeleteSessionQuery,
        response: withErrors({ 200: DeletedSession }),
      },
    },
    async (request) => {
      const tenantId = tenantOf(request).id;
      const session = await loadSession(deps, tenantId, request.params.id);
      const sessionIds = await deleteSession(
        deps,
        request.log,
        tenantId,
        session.id,
        request.query.force === 'true',
      );
      return { deleted: true as const, sessionIds };
    },
  );
};
