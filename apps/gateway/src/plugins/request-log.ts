import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ID_PATTERN } from '../schemas/shared.ts';

// Request logs carry the tenant and the session: once authentication has run (every onRequest
// hook, including the scopes' auth hooks, comes before preValidation), the request's logger gets
// `tenantId` (the authenticated tenant; on operator routes the tenant in the path) and
// `sessionId` (routes under /sessions/:id). Fastify's own "request completed" line and every
// later line of the request then have them. Ids already bound (tenantAuth binds tenantId) are not
// bound twice.

type Bindings = Record<string, unknown>;

/** The pino bindings of a request logger (none when logging is off). */
export function logBindings(request: FastifyRequest): Bindings {
  const log = request.log as unknown as { bindings?: () => Bindings };
  return typeof log.bindings === 'function' ? log.bindings() : {};
}

const SESSION_ROUTE = /\/sessions\/:id(\/|$)/;
const TENANT_ROUTE = /^\/v1\/admin\/tenants\/:id(\/|$)/;

export function installRequestLogContext(app: FastifyInstance): void {
  app.addHook('preValidation', async (request, reply) => {
    const route = request.routeOptions.url;
    if (!route) return;
    const params = (request.params ?? {}) as Record<string, unknown>;
    const id = typeof params.id === 'string' && ID_PATTERN.test(params.id) ? params.id : undefined;
    const bound = logBindings(request);
    const add: Record<string, string> = {};
    const tenantId = request.tenant?.id ?? (id && TENANT_ROUTE.test(route) ? id : undefined);
    if (tenantId && bound.tenantId === undefined) add.tenantId = tenantId;
    if (id && SESSION_ROUTE.test(route) && bound.sessionId === undefined) add.sessionId = id;
    if (Object.keys(add).length === 0) return;
    request.log = request.log.child(add);
    reply.log = request.log;
  });
}
