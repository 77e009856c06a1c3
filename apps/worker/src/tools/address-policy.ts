import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { LooplineError } from '@loopline/core';

// Webhook tools must not reach private or loopback addresses unless the operator allows it
// (LOOPLINE_WEBHOOK_ALLOW_PRIVATE=1, or LOOPLINE_WEBHOOK_ALLOW_HOSTS=host1,host2). The host is
// resolved and every address checked, so a public name pointing at 127.0.0.1 is refused too.

export interface AddressPolicy {
  allowPrivate: boolean;
  allowHosts: string[];
}

export function policyFromEnv(env: NodeJS.ProcessEnv): AddressPolicy {
  return {
    allowPrivate: env.LOOPLINE_WEBHOOK_ALLOW_PRIVATE === '1' || env.LOOPLINE_WEBHOOK_ALLOW_PRIVATE === 'true',
    allowHosts: (env.LOOPLINE_WEBHOOK_ALLOW_HOSTS ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  };
}

function ipv4Private(ip: string): boolean {
  const [a = 0, b = 0] = ip.split('.').map(Number);
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 198 && (b === 18 || b === 19)) ||
    a >= 224
  );
}

/** Loopback, private, link-local, unique-local, CGNAT, multicast and unspecified addresses. */
export function isPrivateAddress(ip: string): boolean {
  if (isIP(ip) === 4) return ipv4Private(ip);
  const v6 = ip.toLowerCase();
  const mapped = v6.match(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/);
  if (mapped?.[1]) return ipv4Private(mapped[1]);
  return (
    v6 === '::' ||
    v6 === '::1' ||
    v6.startsWith('fc') ||
    v6.startsWith('fd') ||
    v6.startsWith('fe8') ||
    v6.startsWith('fe9') ||
    v6.startsWith('fea') ||
    v6.startsWith('feb') ||
    v6.startsWith('ff')
  );
}

export async function assertWebhookAllowed(url: string, policy: AddressPolicy): Promise<void> {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new LooplineError('WebhookRefusedError', `webhook protocol ${parsed.protocol} is not allowed`);
  }
  if (policy.allowPrivate) return;
  const host = parsed.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (policy.allowHosts.includes(host)) return;
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  const blocked = addresses.find(isPrivateAddress);
  if (blocked) {
    throw new LooplineError(
      'WebhookRefusedError',
      `webhook host ${host} resolves to the private or loopback address ${blocked}; set LOOPLINE_WEBHOOK_ALLOW_PRIVATE=1 or LOOPLINE_WEBHOOK_ALLOW_HOSTS to allow it`,
    );
  }
}
