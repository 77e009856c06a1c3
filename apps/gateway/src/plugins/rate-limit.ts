import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { HttpError } from '../lib/http-error.ts';
import { LeasedCounter } from '../lib/rate-lease.ts';

// Request rate per API key (@fastify/rate-limit; its counters in Redis on the shared ioredis
// client, so every gateway process counts into the same window, taken in blocks above 1,000
// requests per window so that a request costs no Redis round trip: lib/rate-lease.ts). The limit is the tenant's
// `requestsPerMinute` (read with the key on each request, so a change applies at once), else the
// deployment default (LOOPLINE_RATE_LIMIT_PER_MINUTE); none → not limited. Registered on the /v1
// scope: its per-route onRequest hook runs after the tenant auth hook, so the key is known (a
// request with a bad key is refused 401 before it is counted). Over the limit: 429 rate_limited,
// with Retry-After (seconds) and the x-ratelimit-* headers.

export async function registerRateLimit(v1: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const fallback = deps.rateLimit?.perMinute ?? 0;
  const limitOf = (request: FastifyRequest) => request.tenant?.limits.requestsPerMinute ?? fallback;
  const { redis } = deps;
  const prefix = deps.keys.rateLimit('');
  await v1.register(rateLimit, {
    store: class extends LeasedCounter {
      constructor() {
        super(redis, prefix);
      }
    },
    timeWindow: deps.rateLimit?.timeWindowMs ?? 60_000,
    // Braces: a Redis Cluster hash tag, so each key's window lives on one slot like every other key.
    keyGenerator: (request) => `{${request.tenant?.keyId ?? request.ip}}`,
    allowList: (request) => limitOf(request) <= 0,
    max: (request) => limitOf(request),
    // Redis unreachable: serve the request unlimited rather than fail it (the readiness check says so).
    skipOnError: true,
    errorResponseBuilder: (_request, context) =>
      new HttpError(
        'rate_limited',
        `Rate limit of ${context.max} requests per window exceeded for this API key; retry in ${context.after}`,
        { limit: context.max, retryAfterSeconds: Math.max(1, Math.ceil(context.ttl / 1000)) },
      ),
  });
}
