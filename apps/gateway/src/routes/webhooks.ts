import {
  deleteWebhookSubscription,
  getWebhookDelivery,
  getWebhookSubscription,
  listWebhookDeliveries,
  listWebhookSubscriptions,
  putWebhookSubscription,
  resetWebhookDelivery,
  type WebhookDelivery,
  type WebhookSubscription,
} from '@loopline/db';
import { queueDeliveries, type WebhookEventType } from '@loopline/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { HttpError, notFound } from '../lib/http-error.ts';
import { iso, isValidName } from '../lib/sessions.ts';
import { checkWebhookUrl, newWebhookSecret, sealWebhookSecret } from '../lib/webhooks.ts';
import { tenantOf } from '../plugins/auth.ts';
import { NameParam, PutNameParam, withErrors } from '../schemas/shared.ts';
import {
  DeliveriesQuery,
  DeliveryParams,
  PutWebhookBody,
  PutWebhookView,
  RedeliverView,
  WebhookDeliveryList,
  WebhookList,
  WebhookView,
} from '../schemas/webhooks.ts';

// Event webhooks of the authenticated tenant: subscriptions (a URL and the event types it wants,
// signed with a secret shown once), their deliveries, and re-delivery. The worker produces the
// events and delivers them (apps/worker/src/webhooks/), through the same egress gate as webhook
// tools, signed with the Standard Webhooks scheme.

const tags = ['webhooks'];

const view = (s: WebhookSubscription) => ({
  name: s.name,
  url: s.url,
  events: s.eventTypes as WebhookEventType[],
  enabled: s.enabled,
  createdAt: iso(s.createdAt),
  updatedAt: iso(s.updatedAt),
});

const deliveryView = (d: WebhookDelivery) => ({
  id: d.id,
  eventId: d.eventId,
  eventType: d.eventType as WebhookEventType,
  status: d.status,
  attempts: d.attempts,
  lastStatus: d.lastStatus,
  lastError: d.lastError,
  payload: d.payload,
  createdAt: iso(d.createdAt),
  deliveredAt: d.deliveredAt ? iso(d.deliveredAt) : null,
});

/** Subscriptions per tenant. */
export const MAX_WEBHOOK_SUBSCRIPTIONS = 20;

/** Event webhook subscriptions and their deliveries. */
export const webhookRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;

  app.put(
    '/webhooks/:name',
    {
      schema: {
        tags,
        summary: 'Create (201) or update (200) a webhook subscription',
        description:
          'Loopline POSTs each subscribed event as JSON `{id, type, timestamp, data}` to the URL, signed ' +
          'with the Standard Webhooks scheme (`webhook-id` = the event id, stable across retries; ' +
          '`webhook-timestamp`; `webhook-signature: v1,<base64 HMAC-SHA256>`). The secret is returned once, ' +
          'when the subscription is created or `rotateSecret` is set. Events: session.idle, session.error, ' +
          'session.waiting (client tools or subagents), compaction.completed, batch.completed. Failed ' +
          'deliveries are retried with backoff, then marked failed; the URL obeys the egress rules of ' +
          'webhook tools (private addresses refused unless the operator allows them).',
        params: PutNameParam,
        body: PutWebhookBody,
        response: withErrors({ 200: PutWebhookView, 201: PutWebhookView }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const { name } = request.params;
      const body = request.body;
      checkWebhookUrl(deps, body.url);
      const exists = await getWebhookSubscription(deps.db, tenantId, name);
      // Every event fans out to each subscription: a bounded count bounds the deliveries per event.
      if (!exists && (await listWebhookSubscriptions(deps.db, tenantId)).length >= MAX_WEBHOOK_SUBSCRIPTIONS)
        throw new HttpError(
          'conflict',
          `A tenant has at most ${MAX_WEBHOOK_SUBSCRIPTIONS} webhook subscriptions: delete one first`,
          { limit: MAX_WEBHOOK_SUBSCRIPTIONS },
        );
      const secret = !exists || body.rotateSecret ? newWebhookSecret() : undefined;
      const saved = await putWebhookSubscription(
        deps.db,
        tenantId,
        name,
        { url: body.url, eventTypes: body.events, enabled: body.enabled },
        secret ? sealWebhookSecret(deps, tenantId, name, secret) : undefined,
      );
      if (!saved)
        throw new HttpError(
          'conflict',
          `Webhook subscription ${name} was deleted while it was being updated: retry`,
        );
      const { subscription, created } = saved;
      request.log.info({ webhook: name, created, rotated: Boolean(secret && exists) }, 'webhook saved');
      return reply.status(created ? 201 : 200).send({ ...view(subscription), ...(secret ? { secret } : {}) });
    },
  );

  app.get(
    '/webhooks',
    {
      schema: {
        tags,
        summary: 'List webhook subscriptions',
        description: 'Every subscription of the authenticated tenant, without secrets.',
        response: withErrors({ 200: WebhookList }),
      },
    },
    async (request) => ({
      webhooks: (await listWebhookSubscriptions(deps.db, tenantOf(request).id)).map(view),
    }),
  );

  app.get(
    '/webhooks/:name',
    {
      schema: {
        tags,
        summary: 'Get a webhook subscription',
        description: 'The subscription without its secret. 404 for an unknown name.',
        params: NameParam,
        response: withErrors({ 200: WebhookView }),
      },
    },
    async (request) => {
      const { name } = request.params;
      const sub = isValidName(name)
        ? await getWebhookSubscription(deps.db, tenantOf(request).id, name)
        : undefined;
      if (!sub) throw notFound('webhook', name);
      return view(sub);
    },
  );

  app.delete(
    '/webhooks/:name',
    {
      schema: {
        tags,
        summary: 'Delete a webhook subscription',
        description: 'No more deliveries; pending ones end as failed. Its delivery history stays listed.',
        params: NameParam,
        response: withErrors({
          200: z
            .object({ deleted: z.literal(true) })
            .describe('Deleted')
            .meta({ example: { deleted: true } }),
        }),
      },
    },
    async (request) => {
      const { name } = request.params;
      const deleted =
        isValidName(name) && (await deleteWebhookSubscription(deps.db, tenantOf(request).id, name));
      if (!deleted) throw notFound('webhook', name);
      return { deleted: true as const };
    },
  );

  app.get(
    '/webhooks/:name/deliveries',
    {
      schema: {
        tags,
        summary: 'List the deliveries of a subscription',
        description:
          'Newest first: each event sent (or being sent), its status (pending, delivered, failed), attempts, ' +
          'the last HTTP status and error, and the body.',
        params: NameParam,
        querystring: DeliveriesQuery,
        response: withErrors({ 200: WebhookDeliveryList }),
      },
    },
    async (request) => {
      const tenantId = tenantOf(request).id;
      const { name } = request.params;
      if (!isValidName(name) || !(await getWebhookSubscription(deps.db, tenantId, name)))
        throw notFound('webhook', name);
      const deliveries = await listWebhookDeliveries(deps.db, tenantId, name, request.query.limit);
      return { deliveries: deliveries.map(deliveryView) };
    },
  );

  app.post(
    '/webhooks/:name/deliveries/:id/redeliver',
    {
      schema: {
        tags,
        summary: 'Deliver an event again',
        description:
          'Sends the delivery again (same event id and body, a fresh signature), with the usual retries. ' +
          '202; 404 for an unknown subscription or delivery; 409 while the delivery is still pending (being ' +
          'delivered or retried): one delivery of an event at a time.',
        params: DeliveryParams,
        response: withErrors({ 202: RedeliverView }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const { name, id } = request.params;
      const delivery = isValidName(name) ? await getWebhookDelivery(deps.db, tenantId, id) : undefined;
      if (!delivery || delivery.subscription !== name) throw notFound('delivery', id);
      if (!(await getWebhookSubscription(deps.db, tenantId, name))) throw notFound('webhook', name);
      // A job id of its own (the first delivery's job may still be kept by BullMQ), recorded
      // first: a job lost after this is re-added by the worker's reconciler.
      const jobId = `${id}-r${Date.now()}`;
      if (!(await resetWebhookDelivery(deps.db, tenantId, id, jobId, { unlessPending: true })))
        throw new HttpError(
          'conflict',
          'The delivery is still pending (being delivered or retried): redeliver it once it has succeeded or failed',
        );
      await queueDeliveries(deps.queues, [{ id, tenantId, jobId }]);
      request.log.info({ webhook: name, deliveryId: id }, 'webhook re-delivery requested');
      return reply
        .status(202)
        .send({ delivery: { ...deliveryView(delivery), status: 'pending' as const, deliveredAt: null } });
    },
  );
};
