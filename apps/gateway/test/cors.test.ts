import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack, tenantWithSession } from './helpers.ts';

// CORS (LOOPLINE_CORS_ORIGINS): listed origins get the CORS headers on preflights, JSON routes,
// errors and the hijacked SSE stream; other origins get none. Without the setting, none at all.

const ORIGIN = 'https://app.example.com';
let stack: Stack;
let plain: Stack;
let base: string;
let t: Awaited<ReturnType<typeof tenantWithSession>>;

beforeAll(async () => {
  stack = await startStack('cors', { corsOrigins: [ORIGIN] });
  plain = await startStack('cors_off');
  base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
  t = await tenantWithSession(stack.app, 'acme');
});
afterAll(async () => {
  await stack?.close();
  await plain?.close();
});

describe('CORS', () => {
  it('answers a preflight for an allowed origin with the headers the API takes', async () => {
    const res = await stack.app.inject({
      method: 'OPTIONS',
      url: '/v1/sessions/x/messages',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,idempotency-key,prefer',
      },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(String(res.headers['access-control-allow-headers'])).toContain('idempotency-key');
    expect(String(res.headers['access-control-allow-methods'])).toContain('DELETE');
  });

  it('sets the headers on JSON answers and errors for allowed origins only', async () => {
    const ok = await stack.app.inject({
      method: 'GET',
      url: '/v1/agents',
      headers: { ...t.auth, origin: ORIGIN },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(String(ok.headers['access-control-expose-headers'])).toContain('retry-after');
    const denied = await stack.app.inject({ method: 'GET', url: '/v1/agents', headers: { origin: ORIGIN } });
    expect(denied.statusCode).toBe(401);
    expect(denied.headers['access-control-allow-origin']).toBe(ORIGIN);
    const other = await stack.app.inject({
      method: 'GET',
      url: '/v1/agents',
      headers: { ...t.auth, origin: 'https://evil.example' },
    });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    const off = await plain.app.inject({ method: 'GET', url: '/healthz', headers: { origin: ORIGIN } });
    expect(off.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('sets them on the SSE stream, which takes the bearer token in a header', async () => {
    const controller = new AbortController();
    const res = await fetch(`${base}/v1/sessions/${t.sessionId}/events`, {
      headers: { ...t.auth, origin: ORIGIN },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    controller.abort();
  });
});
