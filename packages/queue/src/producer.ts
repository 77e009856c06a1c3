import { currentTraceparent } from '@loopline/telemetry';
import { FlowProducer, type JobsOptions, Queue } from 'bullmq';
import { JOBS, type JobData, type JobKind } from './jobs.ts';
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';

// Typed producers for every queue in the catalog.

export type Queues = { [K in JobKind]: Queue } & {
  add<K extends JobKind>(kind: K, jobId: string, data: JobData<K>, opts?: JobsOptions): Promise<void>;
  close(): Promise<void>;
  all(): Queue[];
  /** The flow producer (batches: a parent job with a child per conversation), made on first use. */
  flows(): FlowProducer;
};

/** Creates the BullMQ queues of the job catalog under the namespace's prefix. */
export function createQueues(connection: RedisClient, keys: KeySpace): Queues {
  const make = (kind: JobKind) =>
    new Queue(JOBS[kind].queue, {
      connection,
      prefix: keys.queuePrefix,
      defaultJobOptions: JOBS[kind].options as JobsOptions,
    });
  // Every queue of the catalog (Bull Board, /metrics and the workers all follow it).
  const queues = Object.fromEntries((Object.keys(JOBS) as JobKind[]).map((kind) => [kind, make(kind)])) as {
    [K in JobKind]: Queue;
  };
  let flows: FlowProducer | undefined;
  return {
    ...queues,
    async add(kind, jobId, data, opts) {
      const parsed = JOBS[kind].schema.parse(data);
      // Tracing on: the job continues the caller's trace (a W3C traceparent next to the ids;
      // the worker reads it before parsing, which strips it). See jobTraceparent.
      const trace = currentTraceparent();
      await queues[kind].add(kind, trace ? { ...parsed, [TRACE_FIELD]: trace } : parsed, { ...opts, jobId });
    },
    async close() {
      await Promise.all([...Object.values(queues).map((q) => q.close()), flows?.close()]);
    },
    all: () => Object.values(queues),
    flows: () => {
      flows ??= new FlowProducer({ connection, prefix: keys.queuePrefix });
      return flows;
    },
  };
}

/**
 * Ids of the jobs that are not step jobs (a step job's id comes with its wake reason: wake.ts).
 * Deterministic so that a retried producer collapses onto the same job.
 */
export const jobIds = {
  /** A compaction job per enqueuer's fence: one that ended without a summary never blocks the next. */
  compact: (sessionId: string, messageId: string, fence: number) =>
    `${jobIds.compactOf(sessionId, messageId)}${fence}`,
  /** The common start of every compaction job id of one compaction (its marker message). */
  compactOf: (sessionId: string, messageId: string) => `compact-${sessionId}-${messageId}-f`,
  prune: (sessionId: string, stepCount: number, purpose: string) =>
    `prune-${sessionId}-${stepCount}-${purpose}`,
  /** The prune pass before a compaction, per step runner. */
  pruneForCompaction: (sessionId: string, stepCount: number, fence: number) =>
    jobIds.prune(sessionId, stepCount, `compact-f${fence}`),
  background: (sessionId: string, stepCount: number) => `bg-${sessionId}-${stepCount}`,
  batch: (batchId: string) => `batch-${batchId}`,
  /** One per batch session (a session belongs to at most one batch item). */
  batchItem: (sessionId: string) => `bitem-${sessionId}`,
  /** One title job per session: adding it again is a no-op while BullMQ keeps the first. */
  title: (sessionId: string) => `title-${sessionId}`,
};

/** Job data field of the trace context (not part of any job schema: parsing drops it). */
export const TRACE_FIELD = 'traceparent';

/** The trace context a job was added in, if it was traced. */
export function jobTraceparent(data: unknown): string | undefined {
  const value = data && typeof data === 'object' ? (data as Record<string, unknown>)[TRACE_FIELD] : undefined;
  return typeof value === 'string' ? value : undefined;
}
