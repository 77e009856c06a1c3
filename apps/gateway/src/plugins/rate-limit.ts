import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { HttpError } from '../lib/http-error.ts';
import { LeasedCounter } from '../lib/rate-lease.ts';

// Request rate per API key: one fixed-window counter per key in Redis, shared by every gateway
// process and taken in blocks (lib/rate-lease.ts), so a request usually costs no Redis call and no
// promise (a callback hook). The limit is the tenant's `requestsPerMinute`, else
// LOOPLINE_RATE_LIMIT_PER_MINUTE; none → not limited. Added on the /v1 scope after the tenant auth
// hook, so a bad key is 401 before it is counted. Same answers as @fastify/rate-limit gave: 429
// rate_limited with Retry-After and x-ratelimit-*; Redis unreachable → served unlimited.

/** Registers the per-key limit on the /v1 scope (after the auth hook). */
export async function registerRateLimit(v1: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const fallback = deps.rateLimit?.perMinute ?? 0;
  const windowMs = deps.rateLimit?.timeWindowMs ?? 60_000;
  const counter = new LeasedCounter(deps.redis, deps.keys.rateLimit(''));
  v1.addHook('onRequest', (request, reply, done) => {
    const max = request.tenant?.limits.requestsPerMinute ?? fallback;
    if (max <= 0) return done();
    // Braces: a Redis Cluster hash tag, so each key's window lives on one slot like every other key.
    const key = `{${request.tenant?.keyId ?? request.ip}}`;
    counter.incr(
      key,
      (err, result) => {
        // Redis unreachable: served unlimited (the readiness check says so), headers as for a fresh window.
        const current = err || !result ? 0 : result.current;
        const resetS = err || !result ? 0 : Math.ceil(result.ttl / 1000);
        reply.header('x-ratelimit-limit', max);
        if (current <= max) {
          reply.header('x-ratelimit-remaining', max - current).header('x-ratelimit-reset', resetS);
          return done();
        }
        reply
          .header('x-ratelimit-remaining', 0)
          .header('x-ratelimit-reset', resetS)
          .header('retry-after', resetS);
        done(
          new HttpError(
            'rate_limited',
            `Rate limit of ${max} requests per window exceeded for this API key; retry in ${longDuration(resetS * 1000)}`,
            { limit: max, retryAfterSeconds: Math.max(1, resetS) },
          ),
        );
      },
      windowMs,
      max,
    );
  });
}

/** "1 minute", "30 seconds", "500 ms": the wording the limit's message has always had. */
function longDuration(ms: number): string {
  const units: [number, string][] = [
    [365.25 * 86_400_000, 'year'],
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1_000, 'second'],
  ];
  if (ms < 1_000) return `${ms} ms`;
  const [size, name] = units.find(([size]) => ms >= size)!;
  const n = Math.round(ms / size);
  return `${n} ${name}${n === 1 ? '' : 's'}`;
}
