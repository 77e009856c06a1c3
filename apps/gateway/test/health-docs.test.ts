import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { bearer, createTenant, expectProblem, OPERATOR, type Stack, startStack } from './helpers.ts';

// Health, readiness, the OpenAPI document and the generic error paths.

let stack: Stack;

beforeAll(async () => {
  stack = await startStack('health');
});
afterAll(async () => {
  await stack?.close();
});

describe('health', () => {
  it('/healthz is 200 without auth', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('/readyz is 200 when Redis and PostgreSQL answer', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', checks: { redis: true, postgres: true } });
  });

  it('/readyz is 503 when Redis is unreachable', async () => {
    const dead = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    dead.on('error', () => undefined);
    const app = await buildApp({
      db: stack.db,
      redis: dead,
      queues: stack.queues,
      keys: stack.keys,
      operatorToken: OPERATOR,
    });
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ status: 'unavailable', checks: { redis: false, postgres: true } });
    } finally {
      await app.close();
      dead.disconnect();
    }
  });
});

describe('OpenAPI', () => {
  it('/docs/json is an OpenAPI 3 document listing every route', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.title).toBe('Loopline API');
    const routes = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(routes.sort()).toEqual(
      [
        'GET /healthz',
        'GET /readyz',
        'GET /metrics',
        'POST /v1/admin/tenants',
        'POST /v1/admin/tenants/{id}/keys',
        'DELETE /v1/admin/tenants/{id}/keys/{keyId}',
        'PUT /v1/agents/{name}',
        'GET /v1/agents/{name}',
        'GET /v1/agents',
        'PUT /v1/tools/{name}',
        'GET /v1/tools/{name}',
        'GET /v1/tools',
        'POST /v1/sessions',
        'GET /v1/sessions/{id}',
        'POST /v1/sessions/{id}/messages',
        'GET /v1/sessions/{id}/messages',
        'GET /v1/sessions/{id}/events',
        'POST /v1/sessions/{id}/compact',
        'GET /v1/sessions/{id}/context',
        'POST /v1/sessions/{id}/revert',
        'POST /v1/sessions/{id}/abort',
        'POST /v1/sessions/{id}/tool-results',
        'GET /v1/admin/tenants/{id}',
        'PATCH /v1/admin/tenants/{id}',
        'POST /v1/batches',
        'GET /v1/batches/{id}',
        'GET /v1/batches/{id}/results',
        'POST /v1/batches/{id}/cancel',
        'PUT /v1/webhooks/{name}',
        'GET /v1/webhooks/{name}',
        'GET /v1/webhooks',
        'DELETE /v1/webhooks/{name}',
        'GET /v1/webhooks/{name}/deliveries',
        'POST /v1/webhooks/{name}/deliveries/{id}/redeliver',
        'GET /v1/sessions',
        'DELETE /v1/sessions/{id}',
        'GET /v1/sessions/{id}/children',
        'DELETE /v1/agents/{name}',
        'DELETE /v1/tools/{name}',
        'GET /v1/admin/sessions',
        'GET /v1/admin/sessions/{id}/inspect',
        'GET /admin/inspector',
        'POST /v1/chat',
        'GET /v1/chat/{id}/stream',
      ].sort(),
    );
    const post = doc.paths['/v1/sessions/{id}/messages'].post;
    expect(post.requestBody.content['application/json'].schema.required).toContain('text');
    expect(post.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['id', 'idempotency-key']),
    );
    expect(post.responses['202']).toBeDefined();
    // Named schemas are components: follow their $ref.
    const named = (schema: { $ref?: string }) =>
      schema.$ref ? doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')] : schema;
    expect(named(post.responses['400'].content['application/json'].schema).properties.error).toBeDefined();
    const events = doc.paths['/v1/sessions/{id}/events'].get;
    expect(events.responses['200'].content['text/event-stream']).toBeDefined();
    expect(doc.paths['/v1/admin/tenants'].post.security).toEqual([{ operator: [] }]);
    // Context management routes carry examples and their error responses.
    const revert = doc.paths['/v1/sessions/{id}/revert'].post;
    expect(revert.requestBody.content['application/json'].schema.required).toEqual(['messageId']);
    expect(JSON.stringify(revert.requestBody.content['application/json'])).toContain('msg_');
    const reverted = named(revert.responses['200'].content['application/json'].schema);
    expect(reverted.properties.fromSeq).toBeDefined();
    expect(JSON.stringify(reverted)).toContain('"example');
    expect(revert.responses['409']).toBeDefined();
    const context = doc.paths['/v1/sessions/{id}/context'].get;
    const contextSchema = JSON.stringify(named(context.responses['200'].content['application/json'].schema));
    for (const field of ['percentOfTrigger', 'pruneWouldFree', 'estimatedSavings', 'compactions', 'boundary'])
      expect(contextSchema).toContain(field);
    expect(contextSchema).toContain('"example');
    expect(doc.components.securitySchemes.apiKey.scheme).toBe('bearer');
  });

  it('serves the UI at /docs', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
  });
});

describe('generic errors', () => {
  it('unknown routes are 404 not_found with the problem body', async () => {
    expectProblem(await stack.app.inject({ method: 'GET', url: '/nope' }), 404, 'not_found');
    expectProblem(await stack.app.inject({ method: 'DELETE', url: '/healthz' }), 404, 'not_found');
  });

  it('malformed URLs and very deep JSON are 4xx problems, never 5xx', async () => {
    const t = await createTenant(stack.app, 'deep');
    const long = await stack.app.inject({
      method: 'GET',
      url: `/v1/sessions/${'s'.repeat(600)}`,
      headers: bearer(t.apiKey),
    });
    expectProblem(long, 404, 'not_found');
    for (const url of ['/v1/sessions/%ZZ', '/v1/agents/%E0%A4%A', '/v1/sessions/%00/messages']) {
      const res = await stack.app.inject({ method: 'GET', url, headers: bearer(t.apiKey) });
      expect(res.statusCode, `${url}: ${res.body}`).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, `${url}: ${res.body}`).toBeLessThan(500);
      expectProblem(res, res.statusCode);
    }
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    for (const payload of [
      deep(900_000),
      `{"agent": "a", "metadata": {"x": ${deep(1000)}}}`,
      `{"agent": "a", "metadata": {"x": ${deep(70)}}}`,
    ]) {
      const res = await stack.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: { ...bearer(t.apiKey), 'content-type': 'application/json' },
        payload,
      });
      expectProblem(res, 400, 'validation_error');
    }
  });

  it('bad content on any body route is a 4xx, never a 5xx', async () => {
    const t = await createTenant(stack.app, 'fuzz');
    const urls = [
      '/v1/sessions',
      '/v1/agents/a',
      '/v1/tools/a',
      '/v1/admin/tenants',
      '/v1/sessions/ses_unknown/revert',
    ];
    const bodies: { payload: string; type: string }[] = [
      { payload: '', type: 'application/json' },
      { payload: 'null', type: 'application/json' },
      { payload: '[]', type: 'application/json' },
      { payload: '"str"', type: 'application/json' },
      { payload: '{"__proto__": {"x": 1}}', type: 'application/json' },
      { payload: '{', type: 'application/json' },
      { payload: 'a=b', type: 'application/x-www-form-urlencoded' },
      { payload: '<x/>', type: 'application/xml' },
    ];
    for (const url of urls) {
      const headers = url.startsWith('/v1/admin') ? bearer(OPERATOR) : bearer(t.apiKey);
      for (const b of bodies) {
        const res = await stack.app.inject({
          method: url.startsWith('/v1/sessions') || url.startsWith('/v1/admin') ? 'POST' : 'PUT',
          url,
          headers: { ...headers, 'content-type': b.type },
          payload: b.payload,
        });
        expect(res.statusCode, `${url} ${b.payload}: ${res.body}`).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, `${url} ${b.payload}: ${res.body}`).toBeLessThan(500);
        expectProblem(res, res.statusCode);
      }
    }
  });
});
