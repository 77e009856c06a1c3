import { closeDb, createDb, migrateWhenReady } from '@loopline/db';
import {
  createQueues,
  createRedis,
  describeRedisConfig,
  keySpace,
  redisConfigFromEnv,
} from '@loopline/queue';
import { pino } from 'pino';
import { buildApp } from './app.ts';
import { parseCorsOrigins } from './plugins/cors.ts';

// The gateway process: reads the environment, migrates, listens, and shuts down gracefully on
// SIGTERM/SIGINT (stop accepting, end SSE streams, finish in-flight requests, close pools).
//
//   DATABASE_URL             postgres://…            (required)
//   REDIS_URL                redis://127.0.0.1:6379  (default)
//   DB_POOL_MAX              20                      PostgreSQL connections of this process
//   REDIS_CLUSTER_NODES      host:port,host:port     Redis Cluster seed nodes (REDIS_URL then unused)
//   LOOPLINE_OPERATOR_TOKEN  guards /v1/admin/* and Bull Board (required)
//   LOOPLINE_NAMESPACE       Redis key namespace     (default loopline)
//   PORT / HOST              3000 / 0.0.0.0
//   PUBLIC_URL               written into the OpenAPI servers list (optional; default: the origin
//                            the document is requested from)
//   LOOPLINE_CORS_ORIGINS    browser origins allowed by CORS, comma-separated, or * (default: none)
//   LOG_LEVEL                pino level              (default info)
//   LOOPLINE_DISABLE_AUTOCOMPACT / LOOPLINE_DISABLE_PRUNE   reported by the gauge and /context
//                            (set them as the workers have them; "1" or "true")
//   LOOPLINE_RATE_LIMIT_PER_MINUTE  requests per API key per minute when the tenant sets none
//                            (default 600; 0 = no limit); LOOPLINE_RATE_LIMIT_WINDOW_MS (60000)
//   LOOPLINE_BATCH_MAX_CONVERSATIONS  conversations per batch (default 10000)

const flag = (name: string): boolean => process.env[name] === '1' || process.env[name] === 'true';
const int = (name: string, fallback: number): number => {
  const value = process.env[name];
  return value ? Number.parseInt(value, 10) : fallback;
};

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

export async function main(): Promise<void> {
  const databaseUrl = required('DATABASE_URL');
  const operatorToken = required('LOOPLINE_OPERATOR_TOKEN');
  const redisConfig = redisConfigFromEnv(process.env);
  const port = Number(process.env.PORT ?? 3000);
  const host = process.env.HOST ?? '0.0.0.0';

  // A POST …/messages holds a connection for one statement; 20 (DB_POOL_MAX, as the worker) keeps
  // 50 concurrent requests from queueing for the db default of 10.
  const poolMax = Number(process.env.DB_POOL_MAX ?? 20);
  const db = createDb(databaseUrl, {
    applicationName: 'loopline-gateway',
    max: Number.isInteger(poolMax) && poolMax > 0 ? poolMax : 20,
  });
  // Fastify's logger exists once the app is built; the boot step logs with the same pino settings.
  const bootLogger = pino({ level: process.env.LOG_LEVEL ?? 'info', name: 'gateway' });
  await migrateWhenReady(db, {
    onRetry: (err, attempt, waitMs) =>
      bootLogger.warn({ err, attempt, waitMs }, 'database not reachable at start, retrying'),
  });
  const redis = createRedis(redisConfig, { maxRetriesPerRequest: 3 });
  bootLogger.info({ redis: describeRedisConfig(redisConfig) }, 'redis');
  const keys = keySpace(process.env.LOOPLINE_NAMESPACE ?? 'loopline');
  const queues = createQueues(redis, keys);

  const app = await buildApp({
    db,
    redis,
    queues,
    keys,
    operatorToken,
    logger: { level: process.env.LOG_LEVEL ?? 'info' },
    flags: {
      disableAutocompact: flag('LOOPLINE_DISABLE_AUTOCOMPACT'),
      disablePrune: flag('LOOPLINE_DISABLE_PRUNE'),
    },
    rateLimit: {
      perMinute: int('LOOPLINE_RATE_LIMIT_PER_MINUTE', 600),
      timeWindowMs: int('LOOPLINE_RATE_LIMIT_WINDOW_MS', 60_000),
    },
    batches: { maxConversations: int('LOOPLINE_BATCH_MAX_CONVERSATIONS', 10_000) },
    authCacheMs: int('LOOPLINE_AUTH_CACHE_MS', 2_000),
    corsOrigins: parseCorsOrigins(process.env.LOOPLINE_CORS_ORIGINS),
    ...(process.env.PUBLIC_URL ? { publicUrl: process.env.PUBLIC_URL } : {}),
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
      app.log.info('stopped');
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      process.exitCode = 1;
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port, host });
}

if (import.meta.main) {
  main().catch((err: unknown) => {
    process.stderr.write(`gateway failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
