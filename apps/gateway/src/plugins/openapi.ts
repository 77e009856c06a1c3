import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { nameComponentSchemas } from './openapi-components.ts';
import { describeOperation } from './openapi-operations.ts';

// The OpenAPI document, generated from the routes' zod schemas: UI at /docs, JSON at /docs/json.
// Registered on the root instance before any route so every route is collected. Named schemas
// become components (openapi-components.ts); every operation gets an operationId and only the
// error responses it can answer (openapi-operations.ts). Without PUBLIC_URL the `servers` entry
// is the origin the document was requested from.

/**
 * Component schemas no operation references are dropped: the type provider writes an input and an
 * output variant of every named schema, and most named schemas are only ever one of them.
 */
export function pruneUnusedSchemas(doc: Record<string, unknown>): Record<string, unknown> {
  const components = doc.components as { schemas?: Record<string, unknown> } | undefined;
  const schemas = components?.schemas;
  if (!schemas) return doc;
  const { components: _all, ...rest } = doc;
  const used = new Set<string>();
  const visit = (text: string) => {
    for (const m of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      const name = decodeURIComponent(m[1]!);
      if (used.has(name) || !(name in schemas)) continue;
      used.add(name);
      visit(JSON.stringify(schemas[name]));
    }
  };
  visit(JSON.stringify(rest));
  components.schemas = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
  return doc;
}

/**
 * A response whose schema is a named component gets the component's description (@fastify/swagger
 * only reads an inline schema's, and would write "Default Response").
 */
export function describeResponses(doc: Record<string, unknown>): Record<string, unknown> {
  const schemas = (doc.components as { schemas?: Record<string, { description?: string }> } | undefined)
    ?.schemas;
  const paths = doc.paths as Record<string, Record<string, { responses?: Record<string, Response> }>>;
  type Response = { description?: string; content?: Record<string, { schema?: { $ref?: string } }> };
  for (const ops of Object.values(paths ?? {}))
    for (const op of Object.values(ops))
      for (const response of Object.values(op.responses ?? {})) {
        if (response.description !== 'Default Response') continue;
        const ref = Object.values(response.content ?? {})[0]?.schema?.$ref;
        const name = ref?.startsWith('#/components/schemas/') ? ref.slice(21) : undefined;
        const description = name ? schemas?.[name]?.description : undefined;
        if (description) response.description = description;
      }
  return doc;
}

function requestOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

export async function registerOpenApi(app: FastifyInstance, publicUrl?: string): Promise<void> {
  nameComponentSchemas();
  app.addHook('onRoute', describeOperation);
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Loopline API',
        version: '1.0.0',
        description:
          'Durable LLM-agent sessions. Tenants authenticate with `Authorization: Bearer <api key>`; ' +
          '/v1/admin/*, /metrics, the session inspector and Bull Board (/admin/queues, not described here) ' +
          'need the operator token. Every error is `{"error": {"code", "message", "details"?}}`.',
      },
      servers: publicUrl ? [{ url: publicUrl }] : [],
      tags: [
        { name: 'admin', description: 'Tenants, API keys and the session inspector (operator token)' },
        { name: 'agents', description: 'Agent definitions' },
        { name: 'tools', description: 'Tool definitions' },
        { name: 'sessions', description: 'Sessions, messages, events and compaction' },
        { name: 'chat', description: 'AI SDK UI (useChat) message streams over a session' },
        { name: 'batches', description: 'Many conversations at once, results as JSONL' },
        { name: 'webhooks', description: 'Event webhooks: subscriptions and their deliveries' },
        { name: 'health', description: 'Liveness and readiness' },
        { name: 'operations', description: 'Prometheus metrics (operator token)' },
      ],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'Tenant API key' },
          operator: { type: 'http', scheme: 'bearer', description: 'LOOPLINE_OPERATOR_TOKEN' },
        },
      },
      security: [{ apiKey: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: (input) =>
      describeResponses(
        pruneUnusedSchemas(jsonSchemaTransformObject(input) as Record<string, unknown>),
      ) as ReturnType<typeof jsonSchemaTransformObject>,
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    transformSpecification: (spec, request) =>
      publicUrl ? spec : { ...spec, servers: [{ url: requestOrigin(request) }] },
  });
}
