import { getCompileCacheDir } from 'node:module';
import { ConfigError } from '@loopline/core';
import { createDb, migrateWhenReady } from '@loopline/db';
import { policiesFromConfig, secretBoxFromEnv } from '@loopline/egress';
import { createTokenizer, enableModelTracing, providersFromEnv } from '@loopline/llm';
import { createQueues, createRedis, keySpace, type RedisConfig } from '@loopline/queue';
import { startTracing } from '@loopline/telemetry';
import type { Logger } from 'pino';
import { type WorkerEnv, workerConfigFromEnv } from './config.ts';
import type { WorkerDeps } from './deps.ts';
import { closeEgress, workerEgress } from './egress.ts';
import { limitHeapGrowth } from './heap.ts';
import { createWorkerLogger } from './logger.ts';
import { createWorkerMetrics } from './metrics.ts';
import { startMetricsServer } from './metrics-server.ts';
import { reconcileOptions, startReconciler } from './reconcile.ts';
import { SessionCache } from './session-cache.ts';
import { watch } from './session-context.ts';
import { createStepFences } from './step/fence-batch.ts';
import { createStepFinishes } from './step/finish-batch.ts';
import { createStepStarts } from './step/start-batch.ts';
import { defaultWorkerOptions, startWorkers, stopWorkers } from './worker.ts';

// The worker process: parses its environment once (config.ts: every variable, its default and
// bounds; a bad value stops here with a message naming it), runs every queue's processor, and on
// SIGTERM/SIGINT stops taking jobs and lets the current ones finish.

/** The worker's resources and settings from its parsed environment. */
export function depsFromEnv(
  env: WorkerEnv = workerConfigFromEnv(process.env),
  logger: Logger = createWorkerLogger(env.LOG_LEVEL),
): WorkerDeps {
  // REDIS_URL, or REDIS_CLUSTER_NODES for a Redis Cluster (packages/queue/src/redis.ts).
  const redisConfig: RedisConfig =
    env.REDIS_CLUSTER_NODES.length > 0 ? { clusterNodes: env.REDIS_CLUSTER_NODES } : { url: env.REDIS_URL };
  // One socket write per tick: hundreds of steps share these connections (packages/queue redis.ts).
  const redis = createRedis(redisConfig, { maxRetriesPerRequest: null, coalesceWrites: true });
  const keys = keySpace(env.LOOPLINE_NAMESPACE);
  const metrics = createWorkerMetrics({ tenantLabels: env.LOOPLINE_METRICS_TENANT_LABELS });
  const db = createDb(env.DATABASE_URL, {
    max: env.DB_POOL_MAX,
    preparedStatements: env.DB_PREPARED_STATEMENTS,
  });
  return {
    db,
    redis,
    keys,
    queues: createQueues(redis, keys),
    tokenizer: createTokenizer('o200k_base'),
    logger,
    // Operator model providers (OPENAI_*, LOOPLINE_PROVIDERS; apiKeyEnv names are looked up in the
    // process environment) and the egress gates per purpose: docs/security.md.
    llm: {
      ...(env.OPENAI_API_KEY ? { apiKey: env.OPENAI_API_KEY } : {}),
      ...(env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : {}),
      providers: [...providersFromEnv(env, process.env).values()],
      callTimeoutMs: env.LOOPLINE_MODEL_CALL_TIMEOUT_MS,
      replyMaxChars: env.LOOPLINE_MODEL_REPLY_MAX_CHARS,
    },
    egress: workerEgress(policiesFromConfig(env), {
      webhookMaxBytes: env.LOOPLINE_WEBHOOK_MAX_BYTES,
      attachmentMaxBytes: env.LOOPLINE_ATTACHMENT_MAX_BYTES,
      attachmentTimeoutMs: env.LOOPLINE_ATTACHMENT_TIMEOUT_MS,
      attachmentMaxTotalBytes: env.LOOPLINE_ATTACHMENT_MAX_TOTAL_BYTES,
    }),
    secrets: secretBoxFromEnv(env),
    flags: { disableAutocompact: env.LOOPLINE_DISABLE_AUTOCOMPACT, disablePrune: env.LOOPLINE_DISABLE_PRUNE },
    lockTtlMs: env.LOOPLINE_LOCK_TTL_MS,
    lockRetryMs: env.LOOPLINE_LOCK_RETRY_MS,
    maxProviderRetries: env.LOOPLINE_MAX_PROVIDER_RETRIES,
    maxInterruptedSteps: env.LOOPLINE_MAX_INTERRUPTED_STEPS,
    fairness: {
      maxConcurrentSessions: env.LOOPLINE_MAX_CONCURRENT_SESSIONS,
      tokensPerMinute: env.LOOPLINE_TOKENS_PER_MINUTE,
      slotTtlMs: env.LOOPLINE_SLOT_TTL_MS,
      slotRetryMs: env.LOOPLINE_SLOT_RETRY_MS,
      tokenWindowMs: env.LOOPLINE_TOKEN_WINDOW_MS,
      batchPollMs: env.LOOPLINE_BATCH_POLL_MS,
    },
    metrics,
    titles: !env.LOOPLINE_DISABLE_TITLES,
    sessionCache: watch(
      { metrics },
      new SessionCache({
        maxEntries: env.WORKER_SESSION_CACHE_SESSIONS,
        maxBytes: env.WORKER_SESSION_CACHE_MB * 1024 * 1024,
      }),
    ),
    stepStarts: createStepStarts(
      db,
      { concurrency: env.WORKER_START_CONCURRENCY, maxBatch: env.WORKER_START_BATCH_MAX },
      (n) => metrics.stepStartBatch(n),
    ),
    stepFences: createStepFences(
      db,
      { concurrency: env.WORKER_FENCE_CONCURRENCY, maxBatch: env.WORKER_FENCE_BATCH_MAX },
      (n) => metrics.stepFenceBatch(n),
    ),
    stepFinishes: createStepFinishes(
      db,
      { concurrency: env.WORKER_FINISH_CONCURRENCY, maxBatch: env.WORKER_FINISH_BATCH_MAX },
      (n) => metrics.stepFinishBatch(n),
    ),
  };
}

async function main() {
  const env = workerConfigFromEnv(process.env);
  // Before any step runs; a --heap-growing-percent among the node options wins (heap.ts).
  limitHeapGrowth(env.WORKER_HEAP_GROWTH_PERCENT, [
    ...process.execArgv,
    ...(process.env.NODE_OPTIONS ?? '').split(/\s+/),
  ]);
  // OpenTelemetry traces when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_TRACES_EXPORTER) asks for them.
  const tracing = await startTracing({ serviceName: 'loopline-worker' });
  if (tracing) enableModelTracing();
  const deps = depsFromEnv(env);
  if (tracing) deps.logger.info('tracing on (OpenTelemetry)');
  await migrateWhenReady(deps.db, {
    onRetry: (err, attempt, waitMs) =>
      deps.logger.warn({ err, attempt, waitMs }, 'database not reachable at start, retrying'),
  });
  const workers = startWorkers(deps, {
    ...defaultWorkerOptions,
    concurrency: {
      step: env.WORKER_STEP_CONCURRENCY,
      compact: env.WORKER_COMPACT_CONCURRENCY,
      prune: env.WORKER_PRUNE_CONCURRENCY,
      background: env.WORKER_BACKGROUND_CONCURRENCY,
      title: env.WORKER_TITLE_CONCURRENCY,
      batch: env.WORKER_BATCH_CONCURRENCY,
      batchItem: env.WORKER_BATCH_ITEM_CONCURRENCY,
      webhook: env.WORKER_WEBHOOK_CONCURRENCY,
    },
    jobLockMs: env.WORKER_JOB_LOCK_MS,
    stalledIntervalMs: env.WORKER_STALLED_INTERVAL_MS,
    stepPreparing: env.WORKER_STEP_PREPARE_CONCURRENCY,
  });
  // compileCache: null means every start strips the TypeScript again (docs/DEPLOYMENT.md).
  deps.logger.info(
    { queues: workers.map((w) => w.name), compileCache: getCompileCacheDir() ?? null },
    'worker started',
  );
  // Re-wakes sessions that lost their job and lock (reconcile.ts); LOOPLINE_RECONCILE_INTERVAL_MS=0: off.
  const reconciler = await startReconciler(
    deps,
    reconcileOptions(env.LOOPLINE_RECONCILE_INTERVAL_MS, env.LOOPLINE_RECONCILE_AFTER_MS, deps.lockTtlMs),
  );
  // Prometheus: off unless WORKER_METRICS_PORT is set; loopback unless WORKER_METRICS_HOST says
  // otherwise (metrics-server.ts).
  const metricsServer =
    env.WORKER_METRICS_PORT > 0 && deps.metrics
      ? await startMetricsServer(deps.metrics, {
          port: env.WORKER_METRICS_PORT,
          host: env.WORKER_METRICS_HOST,
          token: env.WORKER_METRICS_TOKEN,
        })
      : undefined;
  if (metricsServer) deps.logger.info({ url: `${metricsServer.url}/metrics` }, 'worker metrics listening');
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    deps.logger.info({ signal }, 'worker stopping');
    reconciler.stop();
    await stopWorkers(workers);
    await metricsServer?.close();
    if (deps.egress) await closeEgress(deps.egress);
    await deps.queues.close();
    deps.redis.disconnect();
    await deps.db.destroy();
    await tracing?.shutdown().catch((err) => deps.logger.warn({ err }, 'trace export at shutdown failed'));
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

if (import.meta.main) {
  main().catch((err: unknown) => {
    // A configuration error is the operator's to fix: its message, not a stack.
    const text = err instanceof ConfigError ? err.message : err instanceof Error ? err.stack : String(err);
    process.stderr.write(`worker failed to start: ${text}\n`);
    process.exit(1);
  });
}
