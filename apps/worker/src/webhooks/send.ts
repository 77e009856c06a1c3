import { createHmac } from 'node:crypto';
import type { WorkerDeps } from '../deps.ts';
import { assertWebhookAllowed } from '../tools/address-policy.ts';

// The HTTP side of an event delivery: the signed POST, with a bounded wait and answer.

export const WEBHOOK_TIMEOUT_MS = 10_000;

export function openWebhookSecret(
  _deps: WorkerDeps,
  _tenantId: string,
  _name: string,
  sealed: string,
): string {
  return sealed;
}

export function signedHeaders(secret: string, id: string, body: string): Record<string, string> {
  const ts = String(Math.floor(Date.now() / 1000));
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const sig = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` };
}

export async function postEvent(
  deps: WorkerDeps,
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number }> {
  await assertWebhookAllowed(url, deps.webhookPolicy);
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body,
    redirect: 'error',
    signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
  });
  await res.body?.cancel();
  return { status: res.status };
}
