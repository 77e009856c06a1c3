import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

// Standard Webhooks signatures (standardwebhooks.com): every webhook request carries
// `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature: v1,<base64>`, the
// HMAC-SHA256 of "id.timestamp.body" keyed with the secret's bytes (`whsec_<base64>`).

export interface WebhookSignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

const PREFIX = 'whsec_';

/** A new per-tool secret: `whsec_` + base64 of 24 random bytes. */
export function generateWebhookSecret(): string {
  return PREFIX + randomBytes(24).toString('base64');
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

function sign(secret: string, id: string, timestamp: string, body: string): string {
  return createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
}

/** The Standard Webhooks headers (id, timestamp, signature) of a body. */
export function signWebhook(
  secret: string,
  id: string,
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): WebhookSignatureHeaders {
  const timestamp = String(nowSeconds);
  return {
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${sign(secret, id, timestamp, body)}`,
  };
}

/** What a tool server does: true when one of the v1 signatures matches and the time is fresh. */
export function verifyWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string,
  opts: { toleranceSeconds?: number; nowSeconds?: number } = {},
): boolean {
  const one = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const id = one('webhook-id');
  const timestamp = one('webhook-timestamp');
  const signatures = one('webhook-signature');
  if (!id || !timestamp || !signatures) return false;
  const now = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestamp)) > (opts.toleranceSeconds ?? 300)) return false;
  const expected = Buffer.from(sign(secret, id, timestamp, body));
  return signatures.split(' ').some((s) => {
    const [version, value] = s.split(',');
    if (version !== 'v1' || !value) return false;
    const got = Buffer.from(value);
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
