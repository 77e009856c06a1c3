import { listStalePendingDeliveries, type PendingDelivery, setWebhookDeliveryJob } from '@loopline/db';
import { queueDeliveries } from '@loopline/queue';
import { continueTrace } from '@loopline/telemetry';
import type { WorkerDeps } from '../deps.ts';

// The two halves of the webhook outbox that run outside the transaction that recorded the
// deliveries (SessionWriter, processors/batch.ts, the gateway's batch cancel):
// - after the commit, each new delivery's job is added (job id = its delivery id: idempotent);
//   a failure is logged and left to the reconciler, never thrown: a webhook must not stop the loop;
// - the reconciler's pass re-adds the job of a pending delivery that Redis does not have (a crash
//   between the commit and the add, a Redis restart without persistence).
// At least once: the receiver dedupes on the event id (`webhook-id`), which every attempt carries.

type Deps = Pick<WorkerDeps, 'queues' | 'logger' | 'racepoint'>;

/** Adds the delivery jobs of a committed write; never throws (the reconciler heals a miss). */
export async function queueWebhookJobs(deps: Deps, deliveries: readonly PendingDelivery[]): Promise<void> {
  if (deliveries.length === 0) return;
  try {
    await deps.racepoint?.('webhook:before-queue');
    await queueDeliveries(deps.queues, deliveries);
  } catch (err) {
    deps.logger.warn(
      { err, tenantId: deliveries[0]!.tenantId, deliveries: deliveries.map((d) => d.id) },
      'webhook delivery jobs not added; the reconciler adds them',
    );
  }
}

/** A pending delivery left alone this long after its last touch has lost its job, or soon will. */
export const DELIVERY_GRACE_MS = 10_000;

/**
 * Re-adds the job of every pending delivery older than `graceMs` that Redis lacks (a fresh id when
 * its job ended with the delivery still pending); returns the deliveries healed.
 */
export async function healWebhookDeliveries(
  deps: Pick<WorkerDeps, 'db' | 'queues' | 'logger'>,
  opts: { graceMs: number; limit?: number },
): Promise<PendingDelivery[]> {
  const healed: PendingDelivery[] = [];
  const stale = await listStalePendingDeliveries(deps.db, {
    olderThanMs: opts.graceMs,
    ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
  });
  for (const d of stale) {
    try {
      const state = await deps.queues.webhook.getJobState(d.jobId);
      if (state !== 'unknown' && state !== 'completed' && state !== 'failed') continue;
      let job = d;
      if (state !== 'unknown') {
        job = { ...d, jobId: `${d.id}-h${Date.now()}` };
        await setWebhookDeliveryJob(deps.db, d.tenantId, d.id, job.jobId);
      }
      await continueTrace('reconcile delivery', d.traceparent, { 'loopline.webhook.delivery': d.id }, () =>
        queueDeliveries(deps.queues, [job]),
      );
      healed.push(job);
      deps.logger.warn(
        { tenantId: d.tenantId, deliveryId: d.id, jobId: job.jobId, lost: state },
        'reconciler re-added a webhook delivery job',
      );
    } catch (err) {
      deps.logger.warn(
        { err, tenantId: d.tenantId, deliveryId: d.id },
        'reconciler could not check a delivery',
      );
    }
  }
  return healed;
}
