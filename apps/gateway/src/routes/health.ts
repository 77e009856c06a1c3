import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { Health, Readiness } from '../schemas/health.ts';

// Liveness (the process answers) and readiness (Redis and PostgreSQL answer), unauthenticated.

const CHECK_TIMEOUT_MS = 2_000;

async function within<T>(ms: number, work: Promise<T>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** GET /healthz (alive) and GET /readyz (Redis and PostgreSQL answer). */
export const healthRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db, redis } = app.deps;

  app.get(
    '/healthz',
    {
      schema: {
        tags: ['health'],
        security: [],
        summary: 'Liveness',
        description: 'Always 200 while the process serves requests; checks no dependency (see /readyz).',
        response: { 200: Health },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        security: [],
        summary: 'Readiness: 200 when Redis PING and PostgreSQL `select 1` succeed, else 503',
        description:
          'Each check has a 2 s timeout. A load balancer should route only to ready gateways; the body ' +
          'says which dependency failed.',
        response: { 200: Readiness, 503: Readiness },
      },
    },
    async (request, reply) => {
      const [redisOk, postgresOk] = await Promise.all([
        within(CHECK_TIMEOUT_MS, redis.ping()),
        within(CHECK_TIMEOUT_MS, db.selectNoFrom((eb) => eb.lit(1).as('one')).execute()),
      ]);
      const ok = redisOk && postgresOk;
      if (!ok) request.log.warn({ redis: redisOk, postgres: postgresOk }, 'not ready');
      return reply
        .status(ok ? 200 : 503)
        .send({ status: ok ? 'ok' : 'unavailable', checks: { redis: redisOk, postgres: postgresOk } });
    },
  );
};
