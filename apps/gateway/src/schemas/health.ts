import { z } from 'zod';

// Schemas of the liveness and readiness probes (routes/health.ts).

export const Health = z
  .object({ status: z.literal('ok') })
  .describe('The process answers')
  .meta({ example: { status: 'ok' } });
export const Readiness = z
  .object({
    status: z.enum(['ok', 'unavailable']),
    checks: z
      .object({
        redis: z.boolean().describe('Redis answered PING'),
        postgres: z.boolean().describe('PostgreSQL answered `select 1`'),
      })
      .describe('Each dependency, checked with a 2 s timeout'),
  })
  .describe('Readiness of the gateway and its dependencies')
  .meta({ example: { status: 'ok', checks: { redis: true, postgres: true } } });
