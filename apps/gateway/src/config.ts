import {
  databaseEnv,
  egressEnv,
  envFlag,
  envInt,
  envList,
  envMs,
  envSecret,
  envString,
  envUrl,
  logEnv,
  parseEnv,
  redisEnv,
  runtimeFlagsEnv,
} from '@loopline/core';
import { tracingEnv } from '@loopline/telemetry';
import { z } from 'zod';
import { DEFAULT_MAX_RUNNING_CONVERSATIONS } from './lib/batches.ts';

// The gateway's whole environment, parsed once by server.ts (a bad value stops the process with a
// message naming the variable). Pieces are exported so a feature adds its variables with
// `gatewayEnv.extend({...})` in one place; the README configuration table is rendered from this.

/** `true`, a hop count, or comma-separated proxy addresses/CIDRs (Fastify `trustProxy`). */
const trustProxy = z
  .preprocess(
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z
      .string()
      .optional()
      .transform((text, ctx): boolean | number | string[] => {
        if (text === undefined) return false;
        const v = text.trim().toLowerCase();
        if (v === 'true') return true;
        if (v === 'false') return false;
        if (/^\d+$/.test(v)) return Number(v);
        const list = v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        if (list.every((s) => /^[0-9a-f.:]+(\/\d{1,3})?$/.test(s))) return list;
        ctx.addIssue({
          code: 'custom',
          message: `must be true, false, a hop count or proxy addresses/CIDRs (got "${text}")`,
        });
        return z.NEVER;
      }),
  )
  .meta({
    doc: 'trust `X-Forwarded-*` from these proxies (`true`, a hop count, or addresses/CIDRs): the client address for auth throttling, HTTPS for `Secure` cookies',
    shown: 'off',
  });

/** The operator token's shortest length: 16 random characters are out of reach of 10 guesses a minute. */
export const MIN_OPERATOR_TOKEN_LENGTH = 16;

export const gatewayListenEnv = z.object({
  LOOPLINE_OPERATOR_TOKEN: envSecret(
    'guards `/v1/admin/*`, `/metrics`, Bull Board and the inspector; at least 16 characters',
    MIN_OPERATOR_TOKEN_LENGTH,
  ),
  PORT: envInt(3000, 'gateway listen port', { min: 0, max: 65_535 }),
  HOST: envString('0.0.0.0', 'gateway listen address'),
  PUBLIC_URL: envUrl(
    undefined,
    ['http', 'https'],
    "base URL written into the OpenAPI document's servers (unset: the origin the document is requested from)",
  ),
  LOOPLINE_CORS_ORIGINS: envList(
    'browser origins allowed to call the API (CORS), comma-separated, e.g. `https://app.example.com`, or `*` for any',
    'none (CORS off)',
  ),
  LOOPLINE_TRUST_PROXY: trustProxy,
});

export const gatewayLimitsEnv = z.object({
  LOOPLINE_RATE_LIMIT_PER_MINUTE: envInt(
    600,
    'requests per API key and window for tenants without `requestsPerMinute` (0 = none)',
    { min: 0, max: 10_000_000 },
  ),
  LOOPLINE_RATE_LIMIT_WINDOW_MS: envMs(60_000, 'the rate-limit window', { min: 1, max: 86_400_000 }),
  LOOPLINE_BATCH_MAX_CONVERSATIONS: envInt(10_000, 'conversations per batch', { min: 1, max: 1_000_000 }),
  LOOPLINE_BATCH_MAX_RUNNING_CONVERSATIONS: envInt(
    DEFAULT_MAX_RUNNING_CONVERSATIONS,
    "conversations a tenant's running batches hold together; past it `POST /v1/batches` is a 409 and writes nothing",
    { min: 1, max: 100_000_000 },
  ),
  LOOPLINE_APPEND_CONCURRENCY: envInt(
    4,
    'POST …/messages statements in flight at once per gateway; messages arriving while all are busy are written together in the next one',
    { min: 1, max: 1_000 },
  ),
  LOOPLINE_APPEND_BATCH_MAX: envInt(64, 'messages written in one statement at most (1 = each on its own)', {
    min: 1,
    max: 1_000,
  }),
  LOOPLINE_AUTH_CACHE_MS: envMs(
    2_000,
    "how long a checked API key (and its tenant's limits) is trusted before PostgreSQL is asked again; 0 = no cache",
    { min: 0, max: 3_600_000 },
  ),
  LOOPLINE_AUTH_FAILURES_PER_MINUTE: envInt(
    30,
    'failed API-key authentications per client address and minute before 429 (0 = no throttle)',
    { min: 0, max: 1_000_000 },
  ),
  LOOPLINE_AUTH_NEGATIVE_CACHE_MS: envMs(
    30_000,
    'how long an unknown API key is answered 401 without asking PostgreSQL again (0 = never cached)',
    { min: 0, max: 3_600_000 },
  ),
  LOOPLINE_SSE_MAX_PER_KEY: envInt(20, 'open event streams per API key and gateway process (0 = no cap)', {
    min: 0,
    max: 1_000_000,
  }),
  LOOPLINE_SSE_MAX_PER_TENANT: envInt(100, 'open event streams per tenant and gateway process (0 = no cap)', {
    min: 0,
    max: 1_000_000,
  }),
  LOOPLINE_SSE_HEARTBEAT_MS: envMs(15_000, 'idle time before an SSE `: heartbeat` comment', {
    min: 100,
    max: 300_000,
  }),
});

export const gatewayOpsEnv = z.object({
  LOOPLINE_OPERATOR_SESSION_MS: envMs(
    8 * 3_600_000,
    'lifetime of the operator browser session cookie (inspector, Bull Board)',
    { min: 60_000, max: 30 * 86_400_000 },
    '28800000 (8 h)',
  ),
  LOOPLINE_METRICS_TENANT_LABELS: envFlag(
    'add a `tenant` label to the per-tenant counters of both processes (one series per tenant: opt in only with a bounded number of tenants)',
  ),
});

export const gatewayEnv = z.object({
  ...databaseEnv.shape,
  ...redisEnv.shape,
  ...logEnv.shape,
  ...gatewayListenEnv.shape,
  ...runtimeFlagsEnv.shape,
  ...egressEnv.shape,
  ...gatewayLimitsEnv.shape,
  ...gatewayOpsEnv.shape,
  ...tracingEnv.shape,
});
export type GatewayEnv = z.output<typeof gatewayEnv>;

/** The gateway's configuration, parsed once from the environment (a bad value throws ConfigError). */
export function gatewayConfigFromEnv(env: Record<string, string | undefined> = process.env): GatewayEnv {
  return parseEnv(gatewayEnv, env, 'gateway');
}
