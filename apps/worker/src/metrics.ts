import type { Usage } from '@loopline/core';
import { DelayedError, RateLimitError, WaitingChildrenError, WaitingError } from 'bullmq';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { CacheStats, MissReason } from './session-cache.ts';

// The worker's Prometheus metrics: every metric object of the worker, on a Registry made per
// WorkerDeps (no module singletons: a test process runs several stacks); metrics-server.ts serves
// it. The series and their labels: README.md, "Operations" (the metrics table).

/** What a model request was for. */
export type ModelPurpose = 'step' | 'summary' | 'title';

export interface ModelCall {
  purpose: ModelPurpose;
  model: string;
  tenantId: string;
  /** Request sent → stream finished (or failed). */
  seconds: number;
  outcome: 'finish' | 'error' | 'aborted';
  usage?: Usage | undefined;
  /** The classified provider error of an `error` outcome (packages/llm classifyError). */
  error?: { kind: string; status?: number | undefined; code?: string | undefined } | undefined;
}

export type SupersededCause = 'stale_fence' | 'lock_lost';

export interface WorkerMetrics {
  readonly registry: Registry;
  /** Runs one job and observes its duration; the outcome comes from how it ended. */
  observeJob<T>(job: { queueName: string }, run: () => Promise<T>): Promise<T>;
  /** A job found its session locked and was put back as delayed. */
  lockWait(queue: string): void;
  /** A run lost its session to a newer runner (its job ends quietly, outcome `superseded`). */
  superseded(job: { queueName: string }, cause: SupersededCause): void;
  modelCall(call: ModelCall): void;
  toolCall(outcome: 'completed' | 'error', seconds: number): void;
  /** A completed compaction; `done` adds its duration and the tokens it saved to the histograms. */
  compaction(rung: string, reason: string, done?: { seconds: number; tokensSaved: number }): void;
  pruned(purpose: string, parts: number, tokens: number): void;
  title(outcome: 'generated' | 'failed' | 'skipped'): void;
  /** An event webhook attempt (processors/webhook.ts). */
  webhookDelivery(outcome: 'delivered' | 'retried' | 'failed'): void;
  /** A session cache lookup (session-cache.ts): a hit, or a miss and its reason. */
  sessionCache(result: 'hit' | 'miss', reason?: MissReason): void;
  /** The session cache whose size the gauges report (read at scrape time). */
  watchSessionCache(stats: CacheStats): void;
  /** The starts one step-start statement wrote (step/start-batch.ts: 1 alone, more batched). */
  stepStartBatch(starts: number): void;
  /** The fences one step-fence statement took (step/fence-batch.ts: 1 alone, more batched). */
  stepFenceBatch(fences: number): void;
  /** The finishes one step-finish statement wrote (step/finish-batch.ts: 1 alone, more batched). */
  stepFinishBatch(finishes: number): void;
}

export interface WorkerMetricsOptions {
  /** prom-client's process and Node.js metrics (default true). */
  defaultMetrics?: boolean;
  /**
   * `tenant` label on the token counters (default false; LOOPLINE_METRICS_TENANT_LABELS): a series
   * per tenant, model and purpose, so only for a bounded number of tenants.
   */
  tenantLabels?: boolean;
}

const JOB_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const MODEL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];
const TOOL_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const COMPACTION_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300];
const SAVED_TOKEN_BUCKETS = [1_000, 5_000, 10_000, 25_000, 50_000, 100_000, 200_000, 500_000, 1_000_000];

/**
 * A provider error's class, bounded for a label: the HTTP status (`429`, `500`), else a network
 * or provider code (`ECONNREFUSED`, `context_length_exceeded`), else `unknown`.
 */
export function providerErrorClass(error: {
  status?: number | undefined;
  code?: string | undefined;
}): string {
  if (error.status !== undefined) return String(error.status);
  if (error.code && /^[A-Za-z0-9_.-]{1,40}$/.test(error.code)) return error.code;
  return 'unknown';
}

/** How a job that threw ended, as BullMQ sees it: moved elsewhere on purpose, or failed. */
function thrownOutcome(err: unknown): string {
  if (err instanceof DelayedError) return 'delayed';
  if (err instanceof RateLimitError) return 'rate_limited';
  if (err instanceof WaitingChildrenError || err instanceof WaitingError) return 'waiting';
  return 'failed';
}

/** Creates the worker's registry and metric objects (and the default process metrics). */
export function createWorkerMetrics(opts: WorkerMetricsOptions = {}): WorkerMetrics {
  const registry = new Registry();
  const registers = [registry];
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });

  const jobDuration = new Histogram({
    name: 'loopline_job_duration_seconds',
    help: 'Session job latency, dequeue to end, by queue and outcome (completed, failed, delayed, superseded, …)',
    labelNames: ['queue', 'outcome'] as const,
    buckets: JOB_BUCKETS,
    registers,
  });
  const modelDuration = new Histogram({
    name: 'loopline_model_duration_seconds',
    help: 'Model request latency, request to finish, by model, purpose (step, summary, title) and outcome',
    labelNames: ['model', 'purpose', 'outcome'] as const,
    buckets: MODEL_BUCKETS,
    registers,
  });
  const tenantLabels = opts.tenantLabels === true;
  const tokenLabels = (tenantLabels ? ['tenant', 'model', 'purpose'] : ['model', 'purpose']) as unknown as [
    'tenant',
    'model',
    'purpose',
  ];
  const tokensIn = new Counter({
    name: 'loopline_tokens_in_total',
    help: 'Prompt tokens reported by the provider (cache reads and writes included)',
    labelNames: tokenLabels,
    registers,
  });
  const tokensCached = new Counter({
    name: 'loopline_tokens_cached_total',
    help: 'Prompt tokens served from the provider prompt cache (part of loopline_tokens_in_total)',
    labelNames: tokenLabels,
    registers,
  });
  const tokensOut = new Counter({
    name: 'loopline_tokens_out_total',
    help: 'Output tokens reported by the provider (reasoning included)',
    labelNames: tokenLabels,
    registers,
  });
  const toolCalls = new Counter({
    name: 'loopline_tool_calls_total',
    help: 'Tool executions by outcome (completed, error)',
    labelNames: ['outcome'] as const,
    registers,
  });
  const toolDuration = new Histogram({
    name: 'loopline_tool_duration_seconds',
    help: 'Tool execution latency by outcome',
    labelNames: ['outcome'] as const,
    buckets: TOOL_BUCKETS,
    registers,
  });
  const compactions = new Counter({
    name: 'loopline_compactions_total',
    help: 'Completed compactions by ladder rung (summary, summary-no-tail, chunked, structural) and reason',
    labelNames: ['rung', 'reason'] as const,
    registers,
  });
  const compactionDuration = new Histogram({
    name: 'loopline_compaction_duration_seconds',
    help: 'Compaction run duration (summary model calls included) by ladder rung and reason',
    labelNames: ['rung', 'reason'] as const,
    buckets: COMPACTION_BUCKETS,
    registers,
  });
  const compactionSaved = new Histogram({
    name: 'loopline_compaction_saved_tokens',
    help: 'Tokens a compaction saved (estimate before minus after), by ladder rung and reason',
    labelNames: ['rung', 'reason'] as const,
    buckets: SAVED_TOKEN_BUCKETS,
    registers,
  });
  const providerErrors = new Counter({
    name: 'loopline_provider_errors_total',
    help: 'Failed model requests by purpose, kind (retryable, overflow, terminal) and class (HTTP status or error code)',
    labelNames: ['purpose', 'kind', 'class'] as const,
    registers,
  });
  const pruneParts = new Counter({
    name: 'loopline_prune_parts_total',
    help: 'Tool outputs cleared by prune passes, by purpose (idle, compact)',
    labelNames: ['purpose'] as const,
    registers,
  });
  const pruneTokens = new Counter({
    name: 'loopline_prune_saved_tokens_total',
    help: 'Tokens (tiktoken) of the tool outputs cleared by prune passes, by purpose',
    labelNames: ['purpose'] as const,
    registers,
  });
  const lockWaits = new Counter({
    name: 'loopline_lock_waits_total',
    help: 'Jobs put back as delayed because their session was locked by another runner',
    labelNames: ['queue'] as const,
    registers,
  });
  const fenceRejections = new Counter({
    name: 'loopline_fence_rejections_total',
    help: 'Runs superseded by a newer runner: a write rejected by the fence (stale_fence) or the lock lost',
    labelNames: ['queue', 'cause'] as const,
    registers,
  });
  const fenceBatch = new Histogram({
    name: 'loopline_step_fence_batch_fences',
    help: 'Step fences taken per fence statement (1: alone; more: group-committed while the statements were busy)',
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers,
  });
  const finishBatch = new Histogram({
    name: 'loopline_step_finish_batch_finishes',
    help: 'Step finishes written per finish statement (1: alone; more: group-committed while the statements were busy)',
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers,
  });
  const startBatch = new Histogram({
    name: 'loopline_step_start_batch_starts',
    help: 'Step starts written per start statement (1: alone; more: group-committed while the statements were busy)',
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers,
  });
  const titles = new Counter({
    name: 'loopline_titles_total',
    help: 'Title jobs by outcome (generated, failed, skipped)',
    labelNames: ['outcome'] as const,
    registers,
  });

  const webhookDeliveries = new Counter({
    name: 'loopline_webhook_deliveries_total',
    help: 'Event webhook attempts by outcome (delivered, retried, failed for good)',
    labelNames: ['outcome'] as const,
    registers,
  });

  const cacheLookups = new Counter({
    name: 'loopline_session_cache_lookups_total',
    help: 'Session cache lookups by result (hit, miss) and miss reason (absent, boundary, changed, oversize)',
    labelNames: ['result', 'reason'] as const,
    registers,
  });
  let cacheStats: CacheStats | undefined;
  new Gauge({
    name: 'loopline_session_cache_entries',
    help: 'Sessions whose log the worker keeps in its session cache',
    registers,
    collect() {
      this.set(cacheStats?.entries ?? 0);
    },
  });
  new Gauge({
    name: 'loopline_session_cache_bytes',
    help: 'Approximate bytes of the logs in the session cache',
    registers,
    collect() {
      this.set(cacheStats?.bytes ?? 0);
    },
  });

  // Jobs a lease runner marked superseded (it returns normally, so the wrapper cannot tell).
  const supersededJobs = new WeakSet<object>();

  return {
    registry,
    async observeJob(job, run) {
      const end = jobDuration.startTimer({ queue: job.queueName });
      try {
        const out = await run();
        end({ outcome: supersededJobs.has(job) ? 'superseded' : 'completed' });
        return out;
      } catch (err) {
        end({ outcome: thrownOutcome(err) });
        throw err;
      }
    },
    lockWait(queue) {
      lockWaits.inc({ queue });
    },
    superseded(job, cause) {
      supersededJobs.add(job);
      fenceRejections.inc({ queue: job.queueName, cause });
    },
    modelCall(call) {
      const { model, purpose } = call;
      modelDuration.observe({ model, purpose, outcome: call.outcome }, call.seconds);
      if (call.error && call.error.kind !== 'aborted')
        providerErrors.inc({ purpose, kind: call.error.kind, class: providerErrorClass(call.error) });
      const u = call.usage;
      if (!u) return;
      const labels = tenantLabels ? { tenant: call.tenantId, model, purpose } : { model, purpose };
      tokensIn.inc(labels, u.input + u.cache.read + u.cache.write);
      tokensCached.inc(labels, u.cache.read);
      tokensOut.inc(labels, u.output + u.reasoning);
    },
    toolCall(outcome, seconds) {
      toolCalls.inc({ outcome });
      toolDuration.observe({ outcome }, seconds);
    },
    compaction(rung, reason, done) {
      compactions.inc({ rung, reason });
      if (!done) return;
      compactionDuration.observe({ rung, reason }, done.seconds);
      compactionSaved.observe({ rung, reason }, Math.max(0, done.tokensSaved));
    },
    pruned(purpose, parts, tokens) {
      if (parts <= 0) return;
      pruneParts.inc({ purpose }, parts);
      pruneTokens.inc({ purpose }, tokens);
    },
    title(outcome) {
      titles.inc({ outcome });
    },
    webhookDelivery(outcome) {
      webhookDeliveries.inc({ outcome });
    },
    sessionCache(result, reason) {
      cacheLookups.inc({ result, reason: reason ?? '' });
    },
    watchSessionCache(stats) {
      cacheStats = stats;
    },
    stepStartBatch(starts) {
      startBatch.observe(starts);
    },
    stepFenceBatch(fences) {
      fenceBatch.observe(fences);
    },
    stepFinishBatch(finishes) {
      finishBatch.observe(finishes);
    },
  };
}

/** Seconds since a `performance.now()` reading. */
export const secondsSince = (start: number): number => (performance.now() - start) / 1000;
