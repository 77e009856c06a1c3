import { getWebhookDelivery, getWebhookSubscription, recordWebhookAttempt } from '@loopline/db';
import type { WebhookJob } from '@loopline/queue';
import type { Job } from 'bullmq';
import type { Log, Metered, Store, WorkerDeps } from '../deps.ts';
import { describeToolError, transportDetail } from '../tools/run-tools.ts';
import { breakerRefusal, recordBreaker } from '../webhooks/breaker.ts';
import { openWebhookSecret, postEvent, signedHeaders } from '../webhooks/send.ts';

// One attempt at delivering an event to a subscription: the stored body, signed with the
// subscription's secret (Standard Webhooks; `webhook-id` is the event id, the same on every
// attempt), POSTed through the egress gate. A 2xx answer delivers it; anything else is recorded
// on the delivery and thrown, so BullMQ retries with backoff (the job catalog's attempts); the
// last failure marks the delivery `failed`. Runs on its own queue: a dead endpoint holds only
// webhook workers, never the loop; and past a few failures in a row the subscription's breaker
// (webhooks/breaker.ts) lets one attempt in 30 s make a request, so it holds few of those.

/** One delivery attempt of an event webhook; throws so BullMQ retries a failure. */
export async function processWebhook(
  deps: Store & Log & Metered & Pick<WorkerDeps, 'egress' | 'secrets' | 'redis' | 'keys'>,
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
  const started = performance.now();
  // An open breaker refuses without a request (webhooks/breaker.ts); an attempt sent counts for it.
  const refused = await breakerRefusal(deps, tenantId, sub.name);
  const { status, failure, detail } =
    refused === undefined
      ? await attemptDelivery(deps, tenantId, sub, delivery)
      : { status: null, failure: refused, detail: undefined };
  if (refused === undefined) await recordBreaker(deps, tenantId, sub.name, failure === undefined);
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
    // detail: a transport failure's own words (the address connected to), for the operator only.
    { ...fields, status, reason: failure, ...(detail ? { detail } : {}), final: last },
    last ? 'webhook delivery failed' : 'webhook delivery failed; retrying',
  );
  throw new Error(failure);
}

/** Signs and POSTs the delivery's stored body: the answer's status, and why it failed if it did. */
async function attemptDelivery(
  deps: Pick<WorkerDeps, 'egress' | 'secrets'>,
  tenantId: string,
  sub: { name: string; url: string; sealedSecret: string },
  delivery: { eventId: string; payload: unknown },
): Promise<{ status: number | null; failure: string | undefined; detail?: string }> {
  let status: number | null = null;
  try {
    const body = JSON.stringify(delivery.payload);
    const secret = openWebhookSecret(deps, tenantId, sub.name, sub.sealedSecret);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Loopline-Webhooks/1',
      ...signedHeaders(secret, delivery.eventId, body),
    };
    status = (await postEvent(deps, sub.url, headers, body)).status;
    return {
      status,
      failure: status < 200 || status > 299 ? `the endpoint answered HTTP ${status}` : undefined,
    };
  } catch (err) {
    const detail = transportDetail(err);
    return { status, failure: describeToolError(err), ...(detail ? { detail } : {}) };
  }
}
