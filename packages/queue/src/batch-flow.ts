import type { JobsOptions } from 'bullmq';
import { JOBS } from './jobs.ts';
import { jobIds, type Queues } from './producer.ts';

// A batch on BullMQ: one flow, the batch as the parent job and one child job per conversation.
// The children run at the tenant's limits (each posts its session's messages; the sessions' steps
// take tenant slots and token budget); the parent runs once all of them have finished. A child
// that fails for good does not block the parent (ignoreDependencyOnFailure): the parent marks
// its item failed. Job ids are deterministic, so the flow of a batch is added at most once.

export interface BatchFlowInput {
  tenantId: string;
  batchId: string;
  items: { index: number; sessionId: string }[];
}

export async function addBatchFlow(queues: Queues, input: BatchFlowInput): Promise<void> {
  const { tenantId, batchId } = input;
  await queues.flows().add({
    name: 'batch',
    queueName: JOBS.batch.queue,
    data: JOBS.batch.schema.parse({ tenantId, batchId }),
    opts: { ...(JOBS.batch.options as JobsOptions), jobId: jobIds.batch(batchId) },
    children: input.items.map(({ index, sessionId }) => ({
      name: 'batchItem',
      queueName: JOBS.batchItem.queue,
      data: JOBS.batchItem.schema.parse({ tenantId, batchId, index, sessionId }),
      opts: {
        ...(JOBS.batchItem.options as JobsOptions),
        jobId: jobIds.batchItem(sessionId),
        ignoreDependencyOnFailure: true,
      },
    })),
  });
}
