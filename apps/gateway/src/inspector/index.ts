import { readFileSync } from 'node:fs';
import { SessionStatus } from '@loopline/core';
import { getSessionAnyTenant, listSessionsAllTenants, type OperatorSession } from '@loopline/db';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound } from '../lib/http-error.ts';
import { operatorAuth, operatorBrowserAuth } from '../plugins/auth.ts';
import type { AppDeps } from '../plugins/deps.ts';
import { ErrorResponse, ID_PATTERN } from '../schemas/shared.ts';
import { inspectSession } from './inspect.ts';

// The session inspector (operator token): a page at /admin/inspector (plain HTML, one script,
// one stylesheet, all served from here so the Content-Security-Policy can be `'self'` only) and
// the JSON it reads, any tenant's sessions:
//
//   GET /v1/admin/sessions?tenant=&status=&limit=    pick a session   (Authorization: Bearer)
//   GET /v1/admin/sessions/:id/inspect               session, log, compactions, steps, series
//   GET /admin/inspector[?session=…]                 the page (Bearer, cookie, or ?token= once)
//   GET /admin/inspector/api/sessions, …/api/sessions/:id   the same JSON for the page (cookie)
//
// Browser auth is Bull Board's: sign in at /admin/login (or `?token=` once, a redirect that drops
// it from the URL) for a signed, expiring HttpOnly, SameSite=Strict cookie scoped to /admin, so
// /v1/admin/* stays bearer-only (plugins/operator-session.ts). The bearer JSON routes and the page
// are in the OpenAPI document (tag admin); the page's cookie copies of the JSON routes and its
// assets are not.

export const INSPECTOR_PATH = '/admin/inspector';

const asset = (name: string): string => readFileSync(new URL(`./assets/${name}`, import.meta.url), 'utf8');

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const ListQuery = z.strictObject({
  tenant: z.string().regex(ID_PATTERN, 'tenant must be a tenant id').optional().describe('Only this tenant'),
  status: SessionStatus.optional().describe('Only this status'),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(500)
    .default(50)
    .describe('At most this many (1–500, default 50)'),
});
const SessionParam = z.object({ id: z.string().describe('Session id (ses_…), of any tenant') });

function sessionRow(s: OperatorSession) {
  return {
    id: s.id,
    tenantId: s.tenantId,
    tenantName: s.tenantName,
    agent: s.agentName,
    model: s.agent.model,
    status: s.status,
    title: s.title,
    stepCount: s.stepCount,
    compactionCount: s.compactionCount,
    lastSeq: s.lastSeq,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}

const OperatorSessionRow = z.object({
  id: z.string(),
  tenantId: z.string(),
  tenantName: z.string(),
  agent: z.string(),
  model: z.string(),
  status: SessionStatus,
  title: z.string().nullable(),
  stepCount: z.number().int(),
  compactionCount: z.number().int(),
  lastSeq: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
const OperatorSessionList = z
  .object({ sessions: z.array(OperatorSessionRow) })
  .describe('Sessions of every tenant, newest first')
  .meta({
    example: {
      sessions: [
        {
          id: 'ses_01JQ8Z9',
          tenantId: 'ten_01JQ8Z0',
          tenantName: 'acme',
          agent: 'researcher',
          model: 'openai/gpt-4.1-mini',
          status: 'idle',
          title: 'Weather in Paris',
          stepCount: 2,
          compactionCount: 0,
          lastSeq: 4,
          createdAt: '2026-05-01T10:00:00.000Z',
          updatedAt: '2026-05-01T10:00:04.200Z',
        },
      ],
    },
  });
const InspectionView = z
  .record(z.string(), z.unknown())
  .describe(
    'The session with its history, steps (attempts, fences, usage), compaction runs and the token gauge over time',
  )
  .meta({
    example: { session: { id: 'ses_01JQ8Z9', status: 'idle' }, steps: [], compactions: [], gauge: [] },
  });
const InspectorPage = z
  .string()
  .describe('The inspector page (HTML)')
  .meta({ example: '<!doctype html><html>…</html>' });

/** The JSON routes, registered twice: bearer-only under /v1/admin (documented), cookie-friendly for the page. */
function jsonRoutes(deps: AppDeps, inspectPath: string, documented: boolean): FastifyPluginAsyncZod {
  const doc = (schema: Record<string, unknown>) =>
    documented ? { tags: ['admin'], security: [{ operator: [] }], ...schema } : { hide: true };
  return async (app) => {
    app.get(
      '/sessions',
      {
        schema: {
          ...doc({
            summary: 'Sessions of every tenant (operator)',
            description:
              "The session inspector's list: sessions of all tenants, newest first, optionally of one tenant or " +
              'status. Operator token.',
            response: { 200: OperatorSessionList, 400: ErrorResponse, 401: ErrorResponse },
          }),
          querystring: ListQuery,
        },
      },
      async (request) => {
        const { tenant, status, limit } = request.query;
        const rows = await listSessionsAllTenants(deps.db, {
          limit,
          ...(tenant !== undefined ? { tenantId: tenant } : {}),
          ...(status !== undefined ? { status } : {}),
        });
        return { sessions: rows.map(sessionRow) };
      },
    );
    app.get(
      inspectPath,
      {
        schema: {
          ...doc({
            summary: 'Inspect a session of any tenant (operator)',
            description:
              'Everything the session inspector page shows: history, steps with their attempts and fences, ' +
              'compaction runs and the token gauge over time. Operator token.',
            response: { 200: InspectionView, 401: ErrorResponse, 404: ErrorResponse },
          }),
          params: SessionParam,
        },
      },
      async (request) => {
        const id = request.params.id;
        const session = ID_PATTERN.test(id) ? await getSessionAnyTenant(deps.db, id) : undefined;
        if (!session) throw notFound('session', id);
        return inspectSession(deps, session);
      },
    );
  };
}

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cache-control', 'no-store');
}

/** Registers the inspector page, its assets and its JSON routes (operator only). */
export async function inspectorPlugin(app: FastifyInstance): Promise<void> {
  const deps = app.deps;
  const html = asset('inspector.html');
  const js = asset('inspector.js');
  const css = asset('inspector.css');

  await app.register(
    async (admin) => {
      admin.addHook('onRequest', operatorAuth(deps.operatorToken, deps.operatorGuard));
      await admin.register(jsonRoutes(deps, '/sessions/:id/inspect', true));
    },
    { prefix: '/v1/admin' },
  );

  await app.register(
    async (page) => {
      page.addHook(
        'onRequest',
        operatorBrowserAuth(deps.operatorToken, {
          sessionMs: deps.operatorSessionMs,
          guard: deps.operatorGuard,
        }),
      );
      page.addHook('onSend', async (_request, reply) => {
        secure(reply);
      });
      page.get(
        '/',
        {
          schema: {
            tags: ['admin'],
            security: [{ operator: [] }],
            summary: 'The session inspector page (operator)',
            description:
              'Sign in at /admin/login (or open /admin/inspector?token=<operator token> once) for a signed, ' +
              'expiring HttpOnly cookie; also accepts the operator token as a bearer token.',
            response: {
              200: { description: 'HTML page', content: { 'text/html': { schema: InspectorPage } } },
              401: ErrorResponse,
            },
          },
        },
        async (_request, reply) => reply.type('text/html; charset=utf-8').send(html),
      );
      page.get('/app.js', { schema: { hide: true } }, async (_request, reply) =>
        reply.type('text/javascript; charset=utf-8').send(js),
      );
      page.get('/app.css', { schema: { hide: true } }, async (_request, reply) =>
        reply.type('text/css; charset=utf-8').send(css),
      );
      await page.register(jsonRoutes(deps, '/sessions/:id', false), { prefix: '/api' });
    },
    { prefix: INSPECTOR_PATH },
  );
}
