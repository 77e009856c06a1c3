import type { RouteOptions } from 'fastify';

// What the OpenAPI document says about each operation beyond its route schema: a stable
// operationId (client generators name their methods after it) and the error responses the
// route can really answer. Applied by an onRoute hook (plugins/openapi.ts) so route files stay
// about behaviour. A route missing from OPERATION_IDS gets an id derived from its method and path.

export const OPERATION_IDS: Record<string, string> = {
  'GET /healthz': 'getHealth',
  'GET /readyz': 'getReadiness',
  'GET /metrics': 'getMetrics',
  'POST /v1/admin/tenants': 'createTenant',
  'GET /v1/admin/tenants/:id': 'getTenant',
  'PATCH /v1/admin/tenants/:id': 'updateTenant',
  'POST /v1/admin/tenants/:id/keys': 'createApiKey',
  'DELETE /v1/admin/tenants/:id/keys/:keyId': 'revokeApiKey',
  'GET /v1/admin/sessions': 'listAllSessions',
  'GET /v1/admin/sessions/:id/inspect': 'inspectSession',
  'GET /admin/inspector': 'getInspectorPage',
  'PUT /v1/agents/:name': 'putAgent',
  'GET /v1/agents/:name': 'getAgent',
  'DELETE /v1/agents/:name': 'deleteAgent',
  'GET /v1/agents': 'listAgents',
  'PUT /v1/tools/:name': 'putTool',
  'GET /v1/tools/:name': 'getTool',
  'DELETE /v1/tools/:name': 'deleteTool',
  'GET /v1/tools': 'listTools',
  'POST /v1/sessions': 'createSession',
  'GET /v1/sessions': 'listSessions',
  'GET /v1/sessions/:id': 'getSession',
  'DELETE /v1/sessions/:id': 'deleteSession',
  'GET /v1/sessions/:id/children': 'listChildSessions',
  'POST /v1/sessions/:id/messages': 'sendMessage',
  'GET /v1/sessions/:id/messages': 'listMessages',
  'GET /v1/sessions/:id/events': 'streamEvents',
  'POST /v1/sessions/:id/compact': 'compactSession',
  'GET /v1/sessions/:id/context': 'getContext',
  'POST /v1/sessions/:id/revert': 'revertSession',
  'POST /v1/sessions/:id/abort': 'abortSession',
  'POST /v1/sessions/:id/tool-results': 'submitToolResults',
  'POST /v1/chat': 'chat',
  'GET /v1/chat/:id/stream': 'resumeChatStream',
  'POST /v1/batches': 'createBatch',
  'GET /v1/batches/:id': 'getBatch',
  'GET /v1/batches/:id/results': 'getBatchResults',
  'POST /v1/batches/:id/cancel': 'cancelBatch',
};

/** Operations that can answer 409 (a conflict with the resource's state). */
const CONFLICTS = new Set([
  'sendMessage',
  'compactSession',
  'revertSession',
  'submitToolResults',
  'deleteSession',
  'deleteTool',
  'chat',
  'putV1WebhooksName', // the per-tenant subscription cap
  'putAgent', // the per-tenant caps of agents and tools
  'putTool',
]);
/** Operations that look up another resource named in the body (404 without a path id). */
const BODY_LOOKUPS = new Set(['createSession', 'createBatch', 'chat']);

export function operationIdOf(method: string, url: string): string {
  const known = OPERATION_IDS[`${method} ${url}`];
  if (known) return known;
  const words = `${method} ${url}`
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
  return words.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('');
}

/** The error statuses a route can answer, from what it takes and where it lives. */
export function errorStatuses(route: RouteOptions, operationId: string): Set<number> {
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  const url = route.url;
  const out = new Set<number>();
  if (schema.params || schema.querystring || schema.body || schema.headers) out.add(400);
  if (url.startsWith('/v1/') || url === '/metrics' || url.startsWith('/admin/')) out.add(401);
  if (url.includes(':') || BODY_LOOKUPS.has(operationId)) out.add(404);
  if (CONFLICTS.has(operationId)) out.add(409);
  if (schema.body) {
    out.add(413);
    out.add(415);
  }
  if (url.startsWith('/v1/') && !url.startsWith('/v1/admin/')) out.add(429);
  return out;
}

const DOCUMENTED_ERRORS = [400, 401, 404, 409, 413, 415, 429];

/** Sets the operationId and drops the generic error responses the route cannot answer. */
export function describeOperation(route: RouteOptions): void {
  const schema = route.schema as Record<string, unknown> | undefined;
  if (!schema || schema.hide) return;
  const method = Array.isArray(route.method) ? route.method[0]! : route.method;
  if (method === 'HEAD') return;
  const operationId = (schema.operationId as string | undefined) ?? operationIdOf(method, route.url);
  schema.operationId = operationId;
  const response = schema.response as Record<string, unknown> | undefined;
  if (!response) return;
  const allowed = errorStatuses(route, operationId);
  for (const status of DOCUMENTED_ERRORS) if (!allowed.has(status)) delete response[status];
}
