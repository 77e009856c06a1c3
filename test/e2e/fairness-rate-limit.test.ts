import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { sleep } from '../support/wait.ts';

// Gateway request rate per API key: a fixed-window counter per key in Redis (the gateway's rate-lease),
// keyed by the authenticated key id, limit from the tenant's requestsPerMinute (else the
// deployment default). Over it: 429 rate_limited with Retry-After; the next window is open again.
// The window is shortened to 2 s here.

const WINDOW_MS = 2_000;
let stack: Stack;

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(`${stack.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${stack.operatorToken}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const get = (key: string, path = '/v1/agents') =>
  fetch(`${stack.url}${path}`, { headers: { authorization: `Bearer ${key}` } });

/** Waits for the start of a fresh window of the key's counter (it opens on its first request). */
const nextWindow = () => sleep(WINDOW_MS + 100); // on purpose: the counter's window must run out

beforeAll(async () => {
  stack = await startStack({ workers: false, rateLimit: { timeWindowMs: WINDOW_MS } });
});
afterAll(() => stack?.close());

describe('rate limit per API key', () => {
  let limited: Client;

  it('answers 429 rate_limited with Retry-After over the limit, and OK again after the window', async () => {
    limited = await stack.tenant('limited');
    expect(
      (await admin('PATCH', `/v1/admin/tenants/${limited.tenantId}`, { limits: { requestsPerMinute: 3 } }))
        .status,
    ).toBe(200);
    await nextWindow();
    for (let i = 0; i < 3; i++) {
      const ok = await get(limited.apiKey);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-ratelimit-limit')).toBe('3');
      expect(ok.headers.get('x-ratelimit-remaining')).toBe(String(2 - i));
    }
    const refused = await get(limited.apiKey, '/v1/sessions/ses_whatever');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await refused.json()) as any;
    expect(Object.keys(body)).toEqual(['error']);
    expect(body.error).toMatchObject({ code: 'rate_limited', details: { limit: 3 } });
    expect(body.error.details.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    await nextWindow();
    expect((await get(limited.apiKey)).status).toBe(200);
  });

  it('counts each key on its own, and other tenants not at all', async () => {
    const second = await admin('POST', `/v1/admin/tenants/${limited.tenantId}/keys`);
    await nextWindow();
    for (let i = 0; i < 3; i++) expect((await get(limited.apiKey)).status).toBe(200);
    expect((await get(limited.apiKey)).status).toBe(429);
    // The tenant's other key has its own counter.
    expect((await get(second.body.apiKey)).status).toBe(200);
    // A tenant without a limit (and no deployment default here) is not limited.
    const free = await stack.tenant('free');
    for (let i = 0; i < 10; i++) expect((await get(free.apiKey)).status).toBe(200);
  });

  it('follows a change of the limit at once; a bad key is 401 before it is counted', async () => {
    await nextWindow();
    expect(
      (await admin('PATCH', `/v1/admin/tenants/${limited.tenantId}`, { limits: { requestsPerMinute: 1 } }))
        .status,
    ).toBe(200);
    expect((await get(limited.apiKey)).status).toBe(200);
    expect((await get(limited.apiKey)).status).toBe(429);
    await admin('PATCH', `/v1/admin/tenants/${limited.tenantId}`, { limits: { requestsPerMinute: null } });
    for (let i = 0; i < 5; i++) expect((await get(limited.apiKey)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await get('ll_not_a_key')).status).toBe(401);
  });
});
