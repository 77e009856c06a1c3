import fastifyCors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

// CORS for browser apps (LOOPLINE_CORS_ORIGINS): the listed origins may call the API with a
// bearer token (no cookies, so no credentials mode). Streams (SSE, AI SDK UI chat streams) are
// read with fetch, which can send the Authorization header — an API key never goes in a URL.
// Streaming routes hijack the reply and write the raw response themselves, so the CORS headers
// are also set on the raw response, where writeHead merges them.

export const CORS_ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'idempotency-key',
  'last-event-id',
  'prefer',
];
export const CORS_EXPOSED_HEADERS = [
  'retry-after',
  'preference-applied',
  'x-vercel-ai-ui-message-stream',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

/** LOOPLINE_CORS_ORIGINS: comma-separated origins, or `*` for any. Empty: CORS off. */
export function parseCorsOrigins(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim().replace(/\/+$/, ''))
    .filter((s) => s.length > 0);
}

/** Registers CORS for the configured origins; none: no CORS headers. */
export async function registerCors(
  app: FastifyInstance,
  origins: readonly string[] | undefined,
): Promise<void> {
  if (!origins || origins.length === 0) return;
  const any = origins.includes('*');
  await app.register(fastifyCors, {
    origin: any ? '*' : [...origins],
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: 600,
    strictPreflight: false,
  });
  app.addHook('onRequest', async (_request, reply) => {
    for (const [name, value] of Object.entries(reply.getHeaders()))
      if ((name.startsWith('access-control-') || name === 'vary') && value !== undefined)
        reply.raw.setHeader(name, value as string | string[]);
  });
}
