import {
  databaseEnv,
  egressEnv,
  envFlag,
  envInt,
  envMs,
  envString,
  logEnv,
  parseEnv,
  redisEnv,
  runtimeFlagsEnv,
} from '@loopline/core';
import { MODEL_REPLY_MAX_CHARS } from '@loopline/llm';
import { tracingEnv } from '@loopline/telemetry';
import { z } from 'zod';
import { MODEL_CALL_TIMEOUT_MS } from './deps.ts';
import { defaultFairness } from './fairness/options.ts';
import { DEFAULT_HEAP_GROWTH_PERCENT } from './heap.ts';
import { defaultSessionCache } from './session-cache.ts';
import { DEFAULT_FENCE_BATCH } from './step/fence-batch.ts';
import { DEFAULT_FINISH_BATCH } from './step/finish-batch.ts';
import { DEFAULT_START_BATCH } from './step/start-batch.ts';
import { defaultWorkerOptions } from './worker.ts';

// The worker's whole environment, parsed once by main.ts (a bad value stops the process with a
// message naming the variable). Pieces are exported so a feature adds its variables with
// `workerEnv.extend({...})` in one place; the README configuration table is rendered from this.

const count = (def: number, doc: string, max = 10_000) => envInt(def, doc, { min: 0, max });
const concurrency = (def: number, what: string, max = 1_000) =>
  envInt(def, `${what} jobs run at once per worker process`, { min: 1, max });
const DAY_MS = 86_400_000;

export const modelEnv = z.object({
  OPENAI_API_KEY: envString(
    undefined,
    'API key of the built-in providers (`openai/`, `compatible/`): sent only to their base URL',
    'unset',
  ),
});

export const loopEnv = z.object({
  LOOPLINE_LOCK_TTL_MS: envMs(15_000, 'session lock TTL (renewed every third)', { min: 500, max: 600_000 }),
  LOOPLINE_LOCK_RETRY_MS: envMs(250, 'retry delay when a session is locked', { min: 10, max: 60_000 }),
  LOOPLINE_MAX_PROVIDER_RETRIES: count(
    8,
    'consecutive retryable provider errors before the session errors',
    100,
  ),
  LOOPLINE_MODEL_CALL_TIMEOUT_MS: envMs(
    MODEL_CALL_TIMEOUT_MS,
    'longest one model call of a step or a summary may take, start to finish (titles have their own 60 s); past it the call fails as a retryable provider error (`ETIMEDOUT`)',
    { min: 1_000, max: 86_400_000 },
  ),
  LOOPLINE_MODEL_REPLY_MAX_CHARS: envInt(
    MODEL_REPLY_MAX_CHARS,
    "most characters one model reply of a step or a summary may stream (text, reasoning and tool-call arguments); past it the reply is cut and the turn ends with a terminal error (`REPLY_TOO_LARGE`): bounds a worker's memory and writes for an endpoint that never stops",
    { min: 10_000, max: 100_000_000 },
  ),
  LOOPLINE_MAX_INTERRUPTED_STEPS: count(
    10,
    'steps in a row closed as interrupted (their worker died or lost its lock) before the session errors (`MaxInterruptionsReachedError`); also the restarts of one compaction job',
    1_000,
  ),
  LOOPLINE_RECONCILE_INTERVAL_MS: envMs(
    30_000,
    'reconciler period, one run per period across all workers (0 = off)',
    {
      min: 0,
      max: DAY_MS,
    },
  ),
  LOOPLINE_RECONCILE_AFTER_MS: envMs(
    0,
    'how long a queued/running/compacting session must be unchanged before the reconciler re-wakes it (0 = 2 × `LOOPLINE_LOCK_TTL_MS`)',
    { min: 0, max: DAY_MS },
    '2 × lock TTL',
  ),
  LOOPLINE_DISABLE_TITLES: envFlag('no session titles'),
});

export const fairnessEnv = z.object({
  LOOPLINE_MAX_CONCURRENT_SESSIONS: count(
    defaultFairness.maxConcurrentSessions,
    'running sessions per tenant for tenants without `maxConcurrentSessions` (0 = no cap)',
    1_000_000,
  ),
  LOOPLINE_TOKENS_PER_MINUTE: count(
    defaultFairness.tokensPerMinute,
    'model tokens per window per tenant for tenants without `tokensPerMinute` (0 = no budget)',
    Number.MAX_SAFE_INTEGER,
  ),
  LOOPLINE_SLOT_TTL_MS: envMs(defaultFairness.slotTtlMs, 'tenant slot lease (expires if its worker dies)', {
    min: 100,
    max: DAY_MS,
  }),
  LOOPLINE_SLOT_RETRY_MS: envMs(defaultFairness.slotRetryMs, 'retry of a step refused a slot (batch: ×10)', {
    min: 10,
    max: 3_600_000,
  }),
  LOOPLINE_TOKEN_WINDOW_MS: envMs(
    defaultFairness.tokenWindowMs,
    'length of the token budget window (`tokensPerMinute` is per window)',
    { min: 100, max: DAY_MS },
  ),
  LOOPLINE_BATCH_POLL_MS: envMs(defaultFairness.batchPollMs, "a busy batch item's fallback poll", {
    min: 100,
    max: 3_600_000,
  }),
});

const c = defaultWorkerOptions.concurrency as Required<typeof defaultWorkerOptions.concurrency>;
export const workerJobsEnv = z.object({
  // Steps mostly wait on the model: a high default, bounded by what one process can feed.
  WORKER_STEP_CONCURRENCY: concurrency(c.step, 'step', 10_000),
  WORKER_STEP_PREPARE_CONCURRENCY: envInt(
    defaultWorkerOptions.stepPreparing ?? 16,
    "steps preparing their model call at once per worker process (loading the session, deciding, writing the step's start); a step lets go when its model call goes out, so this does not cap the calls in flight",
    { min: 1, max: 1_000 },
  ),
  WORKER_COMPACT_CONCURRENCY: concurrency(c.compact, 'compaction'),
  WORKER_PRUNE_CONCURRENCY: concurrency(c.prune, 'prune'),
  WORKER_BACKGROUND_CONCURRENCY: concurrency(c.background, 'background compaction'),
  WORKER_TITLE_CONCURRENCY: concurrency(c.title, 'title'),
  WORKER_BATCH_CONCURRENCY: concurrency(c.batch, 'batch parent'),
  WORKER_BATCH_ITEM_CONCURRENCY: concurrency(c.batchItem, 'batch conversation'),
  WORKER_WEBHOOK_CONCURRENCY: concurrency(c.webhook, 'event webhook delivery'),
  WORKER_JOB_LOCK_MS: envMs(defaultWorkerOptions.jobLockMs, 'BullMQ job lock', {
    min: 100,
    max: 3_600_000,
  }),
  WORKER_STALLED_INTERVAL_MS: envMs(
    defaultWorkerOptions.stalledIntervalMs,
    "how often stalled jobs are looked for (a dead worker's job is retried)",
    { min: 100, max: 3_600_000 },
  ),
});

/** The worker's own egress caps (the shared policy is core's egressEnv; docs/security.md). */
export const webhookEnv = z.object({
  LOOPLINE_WEBHOOK_MAX_BYTES: envInt(
    4 * 1024 * 1024,
    "largest webhook answer read (caps a tool's `maxResponseBytes`)",
    {
      min: 1,
      max: 1024 * 1024 * 1024,
    },
  ),
  LOOPLINE_ATTACHMENT_TIMEOUT_MS: envMs(30_000, 'time cap of one attachment download', {
    min: 100,
    max: 3_600_000,
  }),
  LOOPLINE_ATTACHMENT_MAX_TOTAL_BYTES: envInt(
    50 * 1024 * 1024,
    'most attachment bytes one model request carries (the files of the history since the compaction boundary, downloads and data: URLs together); past it the step ends with an AttachmentError',
    { min: 1, max: 4 * 1024 * 1024 * 1024 },
  ),
});

/** The per-worker session cache (session-cache.ts). */
export const sessionCacheEnv = z.object({
  WORKER_SESSION_CACHE_SESSIONS: envInt(
    defaultSessionCache.maxEntries,
    'sessions whose log since the boundary a worker keeps in memory, read again only where it changed (0 = no cache: every job loads the log)',
    { min: 0, max: 1_000_000 },
  ),
  WORKER_SESSION_CACHE_MB: envInt(
    defaultSessionCache.maxBytes / (1024 * 1024),
    'approximate memory cap of the session cache in MiB, its logs and what it derives from them (least recently used sessions go first)',
    { min: 1, max: 1_048_576 },
  ),
});

/** The group commit of step starts (step/start-batch.ts). */
export const startBatchEnv = z.object({
  WORKER_START_CONCURRENCY: envInt(
    DEFAULT_START_BATCH.concurrency,
    'step-start statements a worker runs at once; starts that arrive while they are all busy are written together in the next one',
    { min: 1, max: 1_000 },
  ),
  WORKER_START_BATCH_MAX: envInt(
    DEFAULT_START_BATCH.maxBatch,
    'step starts written in one statement at most (1 = each on its own)',
    { min: 1, max: 1_000 },
  ),
});

/** The group commit of step fences (step/fence-batch.ts). */
export const fenceBatchEnv = z.object({
  WORKER_FENCE_CONCURRENCY: envInt(
    DEFAULT_FENCE_BATCH.concurrency,
    "step-fence statements (a step's fence with its log: the cached log's changes, or the whole log on a session's first step here) a worker runs at once; fences that arrive while they are all busy are taken together in the next one",
    { min: 1, max: 1_000 },
  ),
  WORKER_FENCE_BATCH_MAX: envInt(
    DEFAULT_FENCE_BATCH.maxBatch,
    'step fences taken in one statement at most (1 = each on its own)',
    { min: 1, max: 1_000 },
  ),
});

/** The group commit of step finishes (step/finish-batch.ts). */
export const finishBatchEnv = z.object({
  WORKER_FINISH_CONCURRENCY: envInt(
    DEFAULT_FINISH_BATCH.concurrency,
    'step-finish statements a worker runs at once; finishes that arrive while they are all busy are written together in the next one',
    { min: 1, max: 1_000 },
  ),
  WORKER_FINISH_BATCH_MAX: envInt(
    DEFAULT_FINISH_BATCH.maxBatch,
    'step finishes written in one statement at most (1 = each on its own)',
    { min: 1, max: 1_000 },
  ),
});

/** V8 heap sizing of the worker process (heap.ts). */
export const workerHeapEnv = z.object({
  WORKER_HEAP_GROWTH_PERCENT: envInt(
    DEFAULT_HEAP_GROWTH_PERCENT,
    "how far V8's old generation may grow past what survived the last full GC before it collects again, in percent (0 = V8's own factor, up to 300 %); lower keeps the RSS peak of many steps in flight down for more frequent full GCs",
    { min: 0, max: 1_000 },
  ),
});

export const workerMetricsEnv = z.object({
  WORKER_METRICS_PORT: envInt(0, "the worker's Prometheus listener port (`/metrics`, `/healthz`; 0 = off)", {
    min: 0,
    max: 65_535,
  }),
  WORKER_METRICS_HOST: envString(
    '127.0.0.1',
    "address of the worker's metrics listener (set `0.0.0.0` to expose it)",
  ),
  WORKER_METRICS_TOKEN: envString(undefined, "bearer token the worker's `/metrics` requires when set"),
  LOOPLINE_METRICS_TENANT_LABELS: envFlag(
    'add a `tenant` label to the per-tenant counters of both processes (one series per tenant: opt in only with a bounded number of tenants)',
  ),
});

export const workerEnv = z.object({
  ...databaseEnv.shape,
  ...redisEnv.shape,
  ...logEnv.shape,
  ...modelEnv.shape,
  ...egressEnv.shape,
  ...runtimeFlagsEnv.shape,
  ...loopEnv.shape,
  ...fairnessEnv.shape,
  ...workerJobsEnv.shape,
  ...webhookEnv.shape,
  ...sessionCacheEnv.shape,
  ...startBatchEnv.shape,
  ...fenceBatchEnv.shape,
  ...finishBatchEnv.shape,
  ...workerHeapEnv.shape,
  ...workerMetricsEnv.shape,
  ...tracingEnv.shape,
});
export type WorkerEnv = z.output<typeof workerEnv>;

/** Parses the worker's environment; a bad value throws a ConfigError naming the variable. */
export function workerConfigFromEnv(env: Record<string, string | undefined> = process.env): WorkerEnv {
  return parseEnv(workerEnv, env, 'worker');
}
