import { ConfigError } from '@loopline/core';
import { closeDb, createDb, migrateWhenReady } from '@loopline/db';
import { policiesFromConfig, secretBoxFromEnv } from '@loopline/egress';
import { providersFromEnv } from '@loopline/llm';
import { createQueues, createRedis, describeRedisConfig, keySpace, type RedisConfig } from '@loopline/queue';
import { startTracing } from '@loopline/telemetry';
import { pino } from 'pino';
import { buildApp } from './app.ts';
import { type GatewayEnv, gatewayConfigFromEnv } from './config.ts';
import { loggerOptions } from './plugins/log-redaction.ts';

// The gateway process: parses the environment once (config.ts: every variable, its default and
// bounds; a bad value stops here with a message naming it), migrates, listens, and shuts down
// gracefully on SIGTERM/SIGINT (stop accepting, end SSE streams, finish in-flight requests, close
// pools).

/** Redis Cluster seeds when REDIS_CLUSTER_NODES is set, else REDIS_URL. */
export function redisConfigOf(env: Pick<GatewayEnv, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>): RedisConfig {
  return env.REDIS_CLUSTER_NODES.length > 0
    ? { clusterNodes: env.REDIS_CLUSTER_NODES }
    : { url: env.REDIS_URL };
}

/** Starts the gateway process. */
export async function main(): Promise<void> {
  const env = gatewayConfigFromEnv(process.env);
  const redisConfig = redisConfigOf(env);

  // A POST …/messages holds a connection for one statement; 20 (DB_POOL_MAX, as the worker) keeps
  // 50 concurrent requests from queueing for the db default of 10.
  const db = createDb(env.DATABASE_URL, {
    applicationName: 'loopline-gateway',
    max: env.DB_POOL_MAX,
    preparedStatements: env.DB_PREPARED_STATEMENTS,
  });
  // Fastify's logger exists once the app is built; the boot step logs with the same pino settings.
  const bootLogger = pino({ ...loggerOptions(env.LOG_LEVEL), name: 'gateway' });
  // OpenTelemetry traces when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_TRACES_EXPORTER) asks for them;
  // started before the app is built, which installs its request spans only then.
  const tracing = await startTracing({ serviceName: 'loopline-gateway' });
  if (tracing) bootLogger.info('tracing on (OpenTelemetry)');
  await migrateWhenReady(db, {
    onRetry: (err, attempt, waitMs) =>
      bootLogger.warn({ err, attempt, waitMs }, 'database not reachable at start, retrying'),
  });
  // One socket write per tick: a request's events and wake job, and those of concurrent requests.
  const redis = createRedis(redisConfig, { maxRetriesPerRequest: 3, coalesceWrites: true });
  bootLogger.info({ redis: describeRedisConfig(redisConfig) }, 'redis');
  const keys = keySpace(env.LOOPLINE_NAMESPACE);
  const queues = createQueues(redis, keys);

  const app = await buildApp({
    // Door checks and sealing: the policies, providers and key the workers use (docs/security.md).
    egress: {
      policies: policiesFromConfig(env),
      // apiKeyEnv names of LOOPLINE_PROVIDERS are looked up in the process environment.
      providers: providersFromEnv(env, process.env),
      secrets: secretBoxFromEnv(env),
      attachmentMaxBytes: env.LOOPLINE_ATTACHMENT_MAX_BYTES,
    },
    db,
    redis,
    queues,
    keys,
    operatorToken: env.LOOPLINE_OPERATOR_TOKEN,
    trustProxy: env.LOOPLINE_TRUST_PROXY,
    logger: loggerOptions(env.LOG_LEVEL),
    flags: { disableAutocompact: env.LOOPLINE_DISABLE_AUTOCOMPACT, disablePrune: env.LOOPLINE_DISABLE_PRUNE },
    rateLimit: {
      perMinute: env.LOOPLINE_RATE_LIMIT_PER_MINUTE,
      timeWindowMs: env.LOOPLINE_RATE_LIMIT_WINDOW_MS,
    },
    batches: {
      maxConversations: env.LOOPLINE_BATCH_MAX_CONVERSATIONS,
      maxRunningConversations: env.LOOPLINE_BATCH_MAX_RUNNING_CONVERSATIONS,
    },
    authCacheMs: env.LOOPLINE_AUTH_CACHE_MS,
    appendBatch: { concurrency: env.LOOPLINE_APPEND_CONCURRENCY, maxBatch: env.LOOPLINE_APPEND_BATCH_MAX },
    authThrottle: {
      failuresPerMinute: env.LOOPLINE_AUTH_FAILURES_PER_MINUTE,
      negativeCacheMs: env.LOOPLINE_AUTH_NEGATIVE_CACHE_MS,
    },
    sse: {
      maxPerKey: env.LOOPLINE_SSE_MAX_PER_KEY,
      maxPerTenant: env.LOOPLINE_SSE_MAX_PER_TENANT,
    },
    sseHeartbeatMs: env.LOOPLINE_SSE_HEARTBEAT_MS,
    operatorSessionMs: env.LOOPLINE_OPERATOR_SESSION_MS,
    metricsTenantLabels: env.LOOPLINE_METRICS_TENANT_LABELS,
    corsOrigins: env.LOOPLINE_CORS_ORIGINS,
    ...(env.PUBLIC_URL ? { publicUrl: env.PUBLIC_URL } : {}),
  });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      app.log.error('shutdown timed out');
      process.exit(1);
    }, 25_000);
    force.unref();
    try {
      await app.close();
      await queues.close();
      redis.disconnect();
      await closeDb(db);
      await tracing?.shutdown();
      app.log.info('stopped');
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      process.exitCode = 1;
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port: env.PORT, host: env.HOST });
}

if (import.meta.main) {
  main().catch((err: unknown) => {
    // A configuration error is the operator's to fix: its message, not a stack.
    const text = err instanceof ConfigError ? err.message : err instanceof Error ? err.stack : String(err);
    process.stderr.write(`gateway failed to start: ${text}\n`);
    process.exit(1);
  });
}
