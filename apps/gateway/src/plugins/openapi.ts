import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

// The OpenAPI document, generated from the routes' zod schemas: UI at /docs, JSON at /docs/json.
// Registered on the root instance before any route so every route is collected.

export async function registerOpenApi(app: FastifyInstance, publicUrl?: string): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Loopline API',
        version: '1.0.0',
        description:
          'Durable LLM-agent sessions. Tenants authenticate with `Authorization: Bearer <api key>`; ' +
          '/v1/admin/*, /metrics and Bull Board (/admin/queues) need the operator token. ' +
          'Every error is `{"error": {"code", "message", "details"?}}`.',
      },
      servers: publicUrl ? [{ url: publicUrl }] : [],
      tags: [
        { name: 'admin', description: 'Tenants and API keys (operator token)' },
        { name: 'agents', description: 'Agent definitions' },
        { name: 'tools', description: 'Tool definitions' },
        { name: 'sessions', description: 'Sessions, messages, events and compaction' },
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
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
}
