import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ID_PATTERN } from '../schemas/shared.ts';

// Request logs carry the tenant and the session: once authentication has run (every onRequest
// hook, including the scopes' auth hooks, comes before preValidation), the request's logger gets
// `tenantId` (the authenticated tenant; on operator routes the tenant in the path) and
// `sessionId` (routes under /sessions/:id). Fastify's own "request completed" line and every
// later line of the request then have them. Ids already bound (tenantAuth binds both on /v1) are
// not bound twice, and are added to the request's own logger (no further child logger): what is
// bound is remembered beside the request, not read back from pino (bindings() parses its JSON).

type Bindings = Record<string, unknown>;

/** The pino bindings of a request logger (none when logging is off). */
export function logBindings(request: FastifyRequest): Bindings {
  const log = request.log as unknown as { bindings?: () => Bindings };
  return typeof log.bindings === 'function' ? log.bindings() : {};
}

const SESSION_ROUTE = /\/sessions\/:id(\/|$)/;
const TENANT_ROUTE = /^\/v1\/admin\/tenants\/:id(\/|$)/;

/** Ids bound to a request's logger by bindLogContext. */
const boundIds = new WeakMap<FastifyRequest, { tenantId?: string; sessionId?: string }>();

/** The session of a /sessions/:id route (a well-formed id), else undefined. */
export function routeSessionId(request: FastifyRequest): string | undefined {
  const route = request.routeOptions.url;
  if (!route || !SESSION_ROUTE.test(route)) return undefined;
  const id = (request.params as Record<string, unknown> | undefined)?.id;
  return typeof id === 'string' && ID_PATTERN.test(id) ? id : undefined;
}

/** Binds the ids not bound yet to the request's (and reply's) logger, in one child logger. */
export function bindLogContext(
  request: FastifyRequest,
  reply: FastifyReply,
  ids: { tenantId?: string | undefined; sessionId?: string | undefined },
): void {
  const bound = boundIds.get(request) ?? {};
  const add: { tenantId?: string; sessionId?: string } = {};
  if (ids.tenantId && bound.tenantId === undefined) add.tenantId = ids.tenantId;
  if (ids.sessionId && bound.sessionId === undefined) add.sessionId = ids.sessionId;
  if (add.tenantId === undefined && add.sessionId === undefined) return;
  boundIds.set(request, { ...bound, ...add });
  // Fastify gives each request a child logger of its own (reqId): extend its bindings in place
  // rather than make a second child; any other logger gets a child.
  const log = request.log as FastifyRequest['log'] & { setBindings?: (b: Bindings) => void };
  if (typeof log.setBindings === 'function' && log !== request.server.log) log.setBindings(add);
  else request.log = request.log.child(add);
  reply.log = request.log;
}

export function installRequestLogContext(app: FastifyInstance): void {
  // Callback hooks here and in the other per-request plugins: an async hook costs a promise.
  app.addHook('preValidation', (request, reply, done) => {
    const route = request.routeOptions.url;
    if (!route) return done();
    const params = (request.params ?? {}) as Record<string, unknown>;
    const id = typeof params.id === 'string' && ID_PATTERN.test(params.id) ? params.id : undefined;
    bindLogContext(request, reply, {
      tenantId: request.tenant?.id ?? (id && TENANT_ROUTE.test(route) ? id : undefined),
      sessionId: id && SESSION_ROUTE.test(route) ? id : undefined,
    });
    done();
  });
}
