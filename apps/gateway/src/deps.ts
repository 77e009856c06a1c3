import type { RuntimeFlags, Tokenizer } from '@loopline/core';
import type { Db } from '@loopline/db';
import type { EgressPolicies, SecretBox } from '@loopline/egress';
import type { Providers } from '@loopline/llm';
import type { KeySpace, Queues, RedisClient } from '@loopline/queue';
import type { FastifyServerOptions } from 'fastify';
import type { GatewayMetrics } from './metrics.ts';

// The resource bag the gateway is built from: no module singletons, so tests can build many. server.ts builds
// it from the environment; tests build it from their own database and Redis key namespace.

export interface GatewayDeps {
  db: Db;
  /**
   * Shared command connection, a single-node `Redis` or a `Cluster` (packages/queue/src/redis.ts).
   * SSE clients share two more per process (packages/queue/src/event-hub.ts).
   */
  redis: RedisClient;
  queues: Queues;
  keys: KeySpace;
  /** Counts tokens of written parts; defaults to @loopline/llm's o200k_base tokenizer. */
  tokenizer?: Tokenizer;
  /** Guards /v1/admin/* and Bull Board. */
  operatorToken: string;
  /** Fastify logger option: false in tests, pino options in production. */
  logger?: FastifyServerOptions['logger'];
  /** Browser origins allowed by CORS (LOOPLINE_CORS_ORIGINS; `*` = any); absent or empty: CORS off. */
  corsOrigins?: readonly string[];
  /**
   * Fastify `trustProxy` (LOOPLINE_TRUST_PROXY): which proxies' `X-Forwarded-For`/`-Proto` to
   * believe, for the client address (auth throttling) and HTTPS (`Secure` cookies). Default none.
   */
  trustProxy?: boolean | number | string[];
  /** Public base URL, written into the OpenAPI document's servers list. */
  publicUrl?: string;
  /** SSE heartbeat interval (default 15 s); tests shorten it. */
  sseHeartbeatMs?: number;
  /**
   * LOOPLINE_DISABLE_AUTOCOMPACT / LOOPLINE_DISABLE_PRUNE as the workers see them: the gauge and
   * /context report what is in effect. Default: both off (nothing disabled).
   */
  flags?: Partial<RuntimeFlags>;
  /**
   * Requests per API key per window when the tenant sets no requestsPerMinute (0 or absent: no
   * limit), and the window (default a minute; tests shorten it). Counters live in Redis.
   */
  rateLimit?: { perMinute?: number; timeWindowMs?: number };
  /**
   * How long this process trusts an API key it has checked (and its tenant's limits) before asking
   * PostgreSQL again (LOOPLINE_AUTH_CACHE_MS; default 2,000; 0 = no cache). A key revoked or limits
   * changed through this process apply at once, through another process within this bound.
   */
  authCacheMs?: number;
  /**
   * Group commit of POST …/messages (lib/append-batch.ts): append statements in flight at once and
   * messages per statement (LOOPLINE_APPEND_CONCURRENCY, LOOPLINE_APPEND_BATCH_MAX; default 4 and
   * 64; a batch of 1 writes every message on its own).
   */
  appendBatch?: { concurrency?: number; maxBatch?: number };
  /**
   * POST /v1/batches: most conversations per batch (default 10,000), in a tenant's running batches
   * together (default 100,000), body limit (default 32 MiB).
   */
  batches?: { maxConversations?: number; maxRunningConversations?: number; bodyLimit?: number };
  /**
   * Door checks of what a tenant stores for later outbound requests (lib/egress.ts): the egress
   * policies the workers apply (LOOPLINE_{WEBHOOK,ATTACHMENT,MODEL}_ALLOW_*), the operator's model
   * providers agents may name, and the box that seals tenant credentials and webhook secrets
   * (LOOPLINE_SECRETS_KEY). Defaults: every private address refused, providers `openai` and
   * `compatible`, no box (agents with their own endpoint refused; webhook tools unsigned).
   */
  egress?: {
    policies?: Partial<EgressPolicies>;
    providers?: Providers;
    secrets?: SecretBox | undefined;
    /** Largest attachment accepted (LOOPLINE_ATTACHMENT_MAX_BYTES, default 10 MiB). */
    attachmentMaxBytes?: number;
  };
  /**
   * Failed API-key authentication: at most `failuresPerMinute` per client address (default 30;
   * 0 = no throttle), and an unknown key is answered from memory for `negativeCacheMs` (default
   * 30,000; 0 = off), so a burst of bad keys costs O(1) PostgreSQL queries.
   */
  authThrottle?: { failuresPerMinute?: number; negativeCacheMs?: number };
  /** Open SSE streams per API key and per tenant in this process (defaults 20 and 100; 0 = no cap). */
  sse?: { maxPerKey?: number; maxPerTenant?: number };
  /** Lifetime of the operator's browser session cookie (default 8 h). */
  operatorSessionMs?: number;
  /** `tenant` label on the per-tenant counters (default off: one series per tenant). */
  metricsTenantLabels?: boolean;
  /** Prometheus registry and metrics (metrics.ts); default: a new one per app. */
  metrics?: GatewayMetrics;
}
