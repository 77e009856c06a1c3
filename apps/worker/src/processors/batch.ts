import { errorData } from '@loopline/core';
import { completeBatch } from '@loopline/db';
import type { BatchJob } from '@loopline/queue';
import type { Job } from 'bullmq';
import type { WorkerDeps } from '../deps.ts';
import { enqueueWebhookEvents } from '../webhooks/enqueue.ts';
import { batchCompletedEvent } from '../webhooks/events.ts';

// The parent job of a batch flow: BullMQ runs it once every item's job has finished (completed,
// or failed for good: the children ignore their failure for the parent). The batch becomes
// `completed` (a cancelled one keeps its status); an item whose job failed is marked failed.

export async function processBatch(deps: WorkerDeps, job: Job<BatchJob>): Promise<void> {
  const { tenantId, batchId } = job.data;
  await completeBatch(deps.db, batchId, errorData('BatchItemError', 'the batch item job failed'));
  deps.logger.info({ tenantId, batchId, jobId: job.id }, 'batch finished');
  await enqueueWebhookEvents(deps, tenantId, [batchCompletedEvent(tenantId, batchId)]);
}
