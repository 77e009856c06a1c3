import { createDb, migrateWhenReady } from '@loopline/db';
import { policiesFromEnv, secretBoxFromEnv } from '@loopline/egress';
import { createTokenizer, providersFromEnv } from '@loopline/llm';
import { createQueues, createRedis, keySpace, redisConfigFromEnv } from '@loopline/queue';
import { pino } from 'pino';
import type { WorkerDeps } from './deps.ts';
import {
  ATTACHMENT_MAX_BYTES,
  ATTACHMENT_TIMEOUT_MS,
  closeEgress,
  WEBHOOK_MAX_BYTES,
  workerEgress,
} from './egress.ts';
import { defaultFairness } from './fairness/options.ts';
import { createWorkerMetrics } from './metrics.ts';
import { startMetricsServer } from './metrics-server.ts';
import { reconcileOptionsFromEnv, startReconciler } from './reconcile.ts';
import { defaultWorkerOptions, startWorkers, stopWorkers } from './worker.ts';

// The worker process: reads its configuration from the environment, runs every queue's
// processor, and on SIGTERM/SIGINT stops taking jobs and lets the current ones finish.

const env = process.env;
const int = (name: string, fallback: number) => (env[name] ? Number.parseInt(env[name], 10) : fallback);

export function depsFromEnv(logger = pino({ level: env.LOG_LEVEL ?? 'info', name: 'worker' })): WorkerDeps {
  // REDIS_URL, or REDIS_CLUSTER_NODES for a Redis Cluster (packages/queue/src/redis.ts).
  const redis = createRedis(redisConfigFromEnv(env), { maxRetriesPerRequest: null });
  const keys = keySpace(env.LOOPLINE_NAMESPACE ?? 'loopline');
  return {
    db: createDb(env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/loopline', {
      max: int('DB_POOL_MAX', 20),
    }),
    redis,
    keys,
    queues: createQueues(redis, keys),
    tokenizer: createTokenizer('o200k_base'),
    logger,
    // Operator model providers (OPENAI_*, LOOPLINE_PROVIDERS) and the egress gates
    // (LOOPLINE_{WEBHOOK,ATTACHMENT,MODEL}_ALLOW_*, byte caps): docs/security.md.
    llm: {
      ...(env.OPENAI_API_KEY ? { apiKey: env.OPENAI_API_KEY } : {}),
      ...(env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : {}),
      providers: [...providersFromEnv(env).values()],
    },
    egress: workerEgress(policiesFromEnv(env), {
      webhookMaxBytes: int('LOOPLINE_WEBHOOK_MAX_BYTES', WEBHOOK_MAX_BYTES),
      attachmentMaxBytes: int('LOOPLINE_ATTACHMENT_MAX_BYTES', ATTACHMENT_MAX_BYTES),
      attachmentTimeoutMs: int('LOOPLINE_ATTACHMENT_TIMEOUT_MS', ATTACHMENT_TIMEOUT_MS),
    }),
    secrets: secretBoxFromEnv(env),
    flags: {
      disableAutocompact:
        env.LOOPLINE_DISABLE_AUTOCOMPACT === '1' || env.LOOPLINE_DISABLE_AUTOCOMPACT === 'true',
      disablePrune: env.LOOPLINE_DISABLE_PRUNE === '1' || env.LOOPLINE_DISABLE_PRUNE === 'true',
    },
    lockTtlMs: int('LOOPLINE_LOCK_TTL_MS', 15_000),
    lockRetryMs: int('LOOPLINE_LOCK_RETRY_MS', 250),
    maxProviderRetries: int('LOOPLINE_MAX_PROVIDER_RETRIES', 8),
    maxInterruptedSteps: int('LOOPLINE_MAX_INTERRUPTED_STEPS', 10),
    fairness: {
      maxConcurrentSessions: int('LOOPLINE_MAX_CONCURRENT_SESSIONS', defaultFairness.maxConcurrentSessions),
      tokensPerMinute: int('LOOPLINE_TOKENS_PER_MINUTE', defaultFairness.tokensPerMinute),
      slotTtlMs: int('LOOPLINE_SLOT_TTL_MS', defaultFairness.slotTtlMs),
      slotRetryMs: int('LOOPLINE_SLOT_RETRY_MS', defaultFairness.slotRetryMs),
      tokenWindowMs: int('LOOPLINE_TOKEN_WINDOW_MS', defaultFairness.tokenWindowMs),
      batchPollMs: int('LOOPLINE_BATCH_POLL_MS', defaultFairness.batchPollMs),
    },
    metrics: createWorkerMetrics(),
    titles: !(env.LOOPLINE_DISABLE_TITLES === '1' || env.LOOPLINE_DISABLE_TITLES === 'true'),
  };
}

async function main() {
  const deps = depsFromEnv();
  await migrateWhenReady(deps.db, {
    onRetry: (err, attempt, waitMs) =>
      deps.logger.warn({ err, attempt, waitMs }, 'database not reachable at start, retrying'),
  });
  const workers = startWorkers(deps, {
    ...defaultWorkerOptions,
    concurrency: {
      step: int('WORKER_STEP_CONCURRENCY', 16),
      compact: int('WORKER_COMPACT_CONCURRENCY', 4),
      prune: int('WORKER_PRUNE_CONCURRENCY', 4),
      background: int('WORKER_BACKGROUND_CONCURRENCY', 2),
      title: int('WORKER_TITLE_CONCURRENCY', 2),
      batch: int('WORKER_BATCH_CONCURRENCY', 2),
      batchItem: int('WORKER_BATCH_ITEM_CONCURRENCY', 16),
    },
    jobLockMs: int('WORKER_JOB_LOCK_MS', defaultWorkerOptions.jobLockMs),
    stalledIntervalMs: int('WORKER_STALLED_INTERVAL_MS', defaultWorkerOptions.stalledIntervalMs),
  });
  deps.logger.info({ queues: workers.map((w) => w.name) }, 'worker started');
  // Re-wakes sessions that lost their job and lock (reconcile.ts); LOOPLINE_RECONCILE_INTERVAL_MS=0: off.
  const reconciler = await startReconciler(deps, reconcileOptionsFromEnv(env, deps.lockTtlMs));
  // Prometheus: off unless WORKER_METRICS_PORT is set (metrics-server.ts).
  const metricsPort = int('WORKER_METRICS_PORT', 0);
  const metricsServer =
    metricsPort > 0 && deps.metrics
      ? await startMetricsServer(deps.metrics, {
          port: metricsPort,
          host: env.WORKER_METRICS_HOST ?? '0.0.0.0',
          token: env.WORKER_METRICS_TOKEN || undefined,
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
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

if (import.meta.main) await main();
