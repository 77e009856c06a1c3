import { errorData } from '@loopline/core';
import { completeBatch } from '@loopline/db';
import { type BatchJob, batchCompletedEvent } from '@loopline/queue';
import { currentTraceparent } from '@loopline/telemetry';
import type { Job } from 'bullmq';
import type { Hooks, Jobs, Log, Store } from '../deps.ts';
import { queueWebhookJobs } from '../webhooks/outbox.ts';

// The parent job of a batch flow: BullMQ runs it once every item's job has finished (completed,
// or failed for good: the children ignore their failure for the parent). The batch becomes
// `completed` (a cancelled one keeps its status); an item whose job failed is marked failed. The
// `batch.completed` webhook event is recorded in the same transaction (the outbox).

/** The parent job of a batch flow: completes the batch once every item finished. */
export async function processBatch(deps: Store & Jobs & Log & Hooks, job: Job<BatchJob>): Promise<void> {
  const { tenantId, batchId } = job.data;
  const traceparent = currentTraceparent();
  const deliveries = await completeBatch(
    deps.db,
    batchId,
    errorData('BatchItemError', 'the batch item job failed'),
    {
      tenantId,
      events: [batchCompletedEvent(tenantId, batchId)],
      ...(traceparent ? { traceparent } : {}),
    },
  );
  deps.logger.info({ tenantId, batchId, jobId: job.id }, 'batch finished');
  await queueWebhookJobs(
    deps,
    deliveries.map((id) => ({ id, tenantId, jobId: id })),
  );
}
