import { duplicateRedis, JOBS, type JobKind, jobTraceparent } from '@loopline/queue';
import { contextFromTraceparent, sessionAttributes, tracingActive, withSpan } from '@loopline/telemetry';
import { SpanKind } from '@opentelemetry/api';
import { DelayedError, type Job, MetricsTime, type Processor, WaitingChildrenError, Worker } from 'bullmq';
import { listenForAborts, SessionJobs, trackSessionJob } from './control/abort.ts';
import type { WorkerDeps } from './deps.ts';
import { processBackground } from './processors/background.ts';
import { processBatch } from './processors/batch.ts';
import { processBatchItem } from './processors/batch-item.ts';
import { processCompact } from './processors/compact.ts';
import { processPrune } from './processors/prune.ts';
import { processStep } from './processors/step.ts';
import { processTitle } from './processors/title.ts';
import { processWebhook } from './processors/webhook.ts';
import { processReconcile } from './reconcile.ts';
import { StepGate } from './step-gate.ts';

// Starts one BullMQ Worker per queue of the catalog, each parsing its payload at dequeue.

export interface WorkerOptions {
  concurrency: Partial<Record<JobKind, number>>;
  /** BullMQ job lock; a job whose worker died is retried after this (stalled check). */
  jobLockMs: number;
  stalledIntervalMs: number;
  /**
   * Steps preparing their model call at once (step-gate.ts): the CPU and PostgreSQL part of a
   * step, not its wait on the model. Default 16.
   */
  stepPreparing?: number;
}

export const defaultWorkerOptions: WorkerOptions = {
  concurrency: {
    // A step mostly waits on the model stream, which holds no PostgreSQL connection and renews its
    // lease in a batched call: one process carries 1,000 conversations (docs/decisions.md D31).
    step: 1_000,
    compact: 4,
    prune: 4,
    background: 2,
    title: 2,
    batch: 2,
    batchItem: 16,
    webhook: 8,
  },
  jobLockMs: 30_000,
  stalledIntervalMs: 15_000,
  // Enough to keep the CPU and the PostgreSQL pool (20) busy; each step prepares in milliseconds.
  stepPreparing: 16,
};

type Processors = Partial<Record<JobKind, (deps: WorkerDeps, job: Job, token?: string) => Promise<void>>>;

/**
 * Session jobs an abort broadcast cancels (their model call stops at once): loop steps and
 * summary compactions. Prune passes and titles make no long model call on the session's behalf.
 */
const ABORTABLE: ReadonlySet<JobKind> = new Set<JobKind>(['step', 'compact', 'background']);

/** Each startWorkers' abort subscription, closed by stopWorkers. */
const abortListeners = new WeakMap<Worker[], { close(): Promise<void> }>();

export const processors: Processors = {
  step: processStep,
  compact: processCompact,
  prune: processPrune,
  background: processBackground,
  title: processTitle,
  batch: processBatch,
  batchItem: processBatchItem,
  reconcile: processReconcile,
  webhook: processWebhook,
};

/** Starts one BullMQ Worker per queue, and the abort listener. */
export function startWorkers(deps: WorkerDeps, opts: WorkerOptions = defaultWorkerOptions): Worker[] {
  const workers: Worker[] = [];
  // Session control: an abort broadcast cancels the step job this process runs for the session.
  const sessionJobs = new SessionJobs();
  abortListeners.set(workers, listenForAborts(deps, sessionJobs));
  // Step jobs start a few at a time; their model calls do not count (step-gate.ts).
  const gate = new StepGate(opts.stepPreparing ?? defaultWorkerOptions.stepPreparing ?? 16);
  for (const kind of Object.keys(JOBS) as JobKind[]) {
    const run = processors[kind];
    if (!run) continue;
    // Three parameters: BullMQ then hands each job a cancellation signal (worker.cancelJob).
    const execute = async (job: Job, token: string | undefined, signal: AbortSignal | undefined) => {
      const untrack = ABORTABLE.has(kind) ? trackSessionJob(sessionJobs, job, worker, signal) : undefined;
      const gated =
        kind === 'step' ? () => gate.run(() => run(deps, job, token)) : () => run(deps, job, token);
      try {
        if (deps.metrics) await deps.metrics.observeJob(job, gated);
        else await gated();
      } finally {
        untrack?.();
      }
    };
    const processor: Processor = async (job, token, signal) => {
      const traceparent = jobTraceparent(job.data); // read before parsing, which drops it
      job.data = JOBS[kind].schema.parse(job.data);
      if (!tracingActive()) return execute(job, token, signal);
      // One span per job run, continuing the trace of whoever added the job (a gateway request
      // or the job before it): a message, its steps, tools and compactions form one trace.
      return withSpan(
        `${kind} job`,
        {
          kind: SpanKind.CONSUMER,
          parent: contextFromTraceparent(traceparent),
          attributes: {
            ...sessionAttributes(job.data),
            'messaging.system': 'bullmq',
            'messaging.destination.name': JOBS[kind].queue,
            'messaging.message.id': job.id ?? '',
            'loopline.job.attempt': job.attemptsMade + 1,
          },
          // Put back on purpose (a busy session lock, a tenant limit), not failed.
          expected: (err) => err instanceof DelayedError || err instanceof WaitingChildrenError,
        },
        () => execute(job, token, signal),
      );
    };
    const worker = new Worker(JOBS[kind].queue, processor, {
      // BullMQ's blocking reads use a duplicate of its own; this one carries fetches and finishes.
      connection: duplicateRedis(deps.redis, { maxRetriesPerRequest: null, coalesceWrites: true }),
      prefix: deps.keys.queuePrefix,
      concurrency: opts.concurrency[kind] ?? 1,
      lockDuration: opts.jobLockMs,
      stalledInterval: opts.stalledIntervalMs,
      maxStalledCount: 1_000,
      // Per-minute completed/failed counts kept in Redis: bullmq_job_{completed,failed}_total on /metrics.
      metrics: { maxDataPoints: MetricsTime.ONE_WEEK },
    });
    worker.on('failed', (job, err) => {
      // A webhook attempt that failed is logged by its processor (warn, with the endpoint's answer).
      if (kind === 'webhook') return;
      deps.logger.error(
        { err, jobId: job?.id, queue: kind, tenantId: job?.data?.tenantId, sessionId: job?.data?.sessionId },
        'job failed',
      );
    });
    worker.on('error', (err) => deps.logger.error({ err, queue: kind }, 'worker error'));
    workers.push(worker);
  }
  return workers;
}

/** Closes the workers and their abort listener. */
export async function stopWorkers(workers: Worker[]): Promise<void> {
  await Promise.all(workers.map((w) => w.close()));
  const listener = abortListeners.get(workers);
  abortListeners.delete(workers);
  await listener?.close();
}
