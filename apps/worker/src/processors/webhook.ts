import { getWebhookDelivery, getWebhookSubscription, recordWebhookAttempt } from '@loopline/db';
import type { WebhookJob } from '@loopline/queue';
import type { Job } from 'bullmq';
import type { Log, Metered, Store, WorkerDeps } from '../deps.ts';
import { describeToolError } from '../tools/run-tools.ts';
import { openWebhookSecret, postEvent, signedHeaders } from '../webhooks/send.ts';

// One attempt at delivering an event to a subscription: the stored body, signed with the
// subscription's secret (Standard Webhooks; `webhook-id` is the event id, the same on every
// attempt), POSTed through the egress gate. A 2xx answer delivers it; anything else is recorded
// on the delivery and thrown, so BullMQ retries with backoff (the job catalog's attempts); the
// last failure marks the delivery `failed`. Runs on its own queue: a dead endpoint holds only
// webhook workers, never the loop.

/** One delivery attempt of an event webhook; throws so BullMQ retries a failure. */
export async function processWebhook(
  deps: Store & Log & Metered & Pick<WorkerDeps, 'egress' | 'secrets'>,
  job: Job<WebhookJob>,
): Promise<void> {
  const { tenantId, deliveryId } = job.data;
  const attempt = job.attemptsMade + 1;
  const last = attempt >= (job.opts.attempts ?? 1);
  const log = deps.logger.child({ tenantId, deliveryId, jobId: job.id, queue: job.queueName, attempt });
  const delivery = await getWebhookDelivery(deps.db, tenantId, deliveryId);
  if (!delivery || delivery.status === 'delivered') return;
  const sub = await getWebhookSubscription(deps.db, tenantId, delivery.subscription);
  if (!sub?.enabled) {
    const why = sub ? 'the subscription is disabled' : 'the subscription was deleted';
    await recordWebhookAttempt(deps.db, tenantId, deliveryId, {
      status: 'failed',
      lastStatus: null,
      lastError: why,
    });
    log.info({ webhook: delivery.subscription }, `webhook delivery dropped: ${why}`);
    return;
  }
  const body = JSON.stringify(delivery.payload);
  let status: number | null = null;
  let failure: string | undefined;
  const started = performance.now();
  try {
    const secret = openWebhookSecret(deps, tenantId, sub.name, sub.sealedSecret);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Loopline-Webhooks/1',
      ...signedHeaders(secret, delivery.eventId, body),
    };
    status = (await postEvent(deps, sub.url, headers, body)).status;
    if (status < 200 || status > 299) failure = `the endpoint answered HTTP ${status}`;
  } catch (err) {
    failure = describeToolError(err);
  }
  const durationMs = Math.round(performance.now() - started);
  const fields = { webhook: sub.name, eventType: delivery.eventType, eventId: delivery.eventId, durationMs };
  if (failure === undefined) {
    await recordWebhookAttempt(deps.db, tenantId, deliveryId, {
      status: 'delivered',
      lastStatus: status,
      lastError: null,
    });
    deps.metrics?.webhookDelivery('delivered');
    log.info({ ...fields, status }, 'webhook delivered');
    return;
  }
  await recordWebhookAttempt(deps.db, tenantId, deliveryId, {
    status: last ? 'failed' : 'pending',
    lastStatus: status,
    lastError: failure,
  });
  deps.metrics?.webhookDelivery(last ? 'failed' : 'retried');
  log.warn(
    { ...fields, status, reason: failure, final: last },
    last ? 'webhook delivery failed' : 'webhook delivery failed; retrying',
  );
  throw new Error(failure);
}
