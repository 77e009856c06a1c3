import { EgressRefusedError, signWebhook } from '@loopline/egress';
import { webhookSecretAad } from '@loopline/queue';
import type { WorkerDeps } from '../deps.ts';
import { egressOf } from '../egress.ts';

// The HTTP side of an event delivery: the POST through the webhook egress gate (the address
// checked at connect, redirects refused, the answer read with a byte and time cap), signed with
// the Standard Webhooks scheme (packages/egress signing).

export const WEBHOOK_TIMEOUT_MS = 10_000;
/** The answer is not used; read at most this much of it. */
const ANSWER_MAX_BYTES = 64 * 1024;

/** The subscription's secret, opened (LOOPLINE_SECRETS_KEY); throws when it cannot be. */
export function openWebhookSecret(
  deps: Pick<WorkerDeps, 'secrets'>,
  tenantId: string,
  name: string,
  sealed: string,
): string {
  if (!deps.secrets) throw new Error('the signing secret cannot be opened: LOOPLINE_SECRETS_KEY is not set');
  return deps.secrets.open(sealed, webhookSecretAad(tenantId, name));
}

/** The Standard Webhooks signature headers of a body. */
export function signedHeaders(secret: string, eventId: string, body: string): Record<string, string> {
  return { ...signWebhook(secret, eventId, body) };
}

/** POSTs an event body through the webhook egress gate. */
export async function postEvent(
  deps: Pick<WorkerDeps, 'egress'>,
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number }> {
  try {
    const res = await egressOf(deps).gates.webhook.request(
      url,
      { method: 'POST', headers, body },
      { maxBytes: ANSWER_MAX_BYTES, timeoutMs: WEBHOOK_TIMEOUT_MS },
    );
    return { status: res.status };
  } catch (err) {
    // An answer over the cap still answered: its status is unknown, the attempt failed.
    if (err instanceof EgressRefusedError) throw new Error(err.message);
    throw err;
  }
}
