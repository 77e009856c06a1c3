import { currentTraceparent } from '@loopline/telemetry';
import type { JobsOptions } from 'bullmq';
import { JOBS } from './jobs.ts';
import { jobIds, type Queues, TRACE_FIELD } from './producer.ts';

// A batch on BullMQ: one flow, the batch as the parent job and one child job per conversation.
// The children run at the tenant's limits (each posts its session's messages; the sessions' steps
// take tenant slots and token budget); the parent runs once all of them have finished. A child
// that fails for good does not block the parent (ignoreDependencyOnFailure): the parent marks
// its item failed. Job ids are deterministic, so the flow of a batch is added at most once.
// Tracing on: every job of the flow carries the trace context (as Queues.add does), the creating
// request's, or the one stored with the batch when the reconciler adds the flow again.

export interface BatchFlowInput {
  tenantId: string;
  batchId: string;
  items: { index: number; sessionId: string }[];
  /** The trace to continue; default the active one. */
  traceparent?: string;
}

/** Adds a batch's BullMQ flow: the parent job and one child job per item. */
export async function addBatchFlow(queues: Queues, input: BatchFlowInput): Promise<void> {
  const { tenantId, batchId } = input;
  const trace = input.traceparent ?? currentTraceparent();
  const traced = <T extends object>(data: T) => (trace ? { ...data, [TRACE_FIELD]: trace } : data);
  await queues.flows().add({
    name: 'batch',
    queueName: JOBS.batch.queue,
    data: traced(JOBS.batch.schema.parse({ tenantId, batchId })),
    opts: { ...(JOBS.batch.options as JobsOptions), jobId: jobIds.batch(batchId) },
    children: input.items.map(({ index, sessionId }) => ({
      name: 'batchItem',
      queueName: JOBS.batchItem.queue,
      data: traced(JOBS.batchItem.schema.parse({ tenantId, batchId, index, sessionId })),
      opts: {
        ...(JOBS.batchItem.options as JobsOptions),
        jobId: jobIds.batchItem(sessionId),
        ignoreDependencyOnFailure: true,
      },
    })),
  });
}
