import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  OPERATOR,
  type Stack,
  startStack,
  tenantWithSession,
} from '../../apps/gateway/test/helpers.ts';
import { createWorkerLogger } from '../../apps/worker/src/logger.ts';

// Secrets stay out of logs and URLs: the operator token, API keys, cookies and credential query
// parameters never appear in a gateway or worker log line; the browser login posts the token once
// and gets a signed, expiring HttpOnly SameSite=Strict cookie (never the token), and `?token=` is
// only a redirect that drops it from the URL.

/** A pino destination that keeps every line. */
function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, stream };
}

const logs = capture();
let stack: Stack;
let base: string;
let t: Awaited<ReturnType<typeof tenantWithSession>>;

beforeAll(async () => {
  stack = await startStack('log_redaction', { logger: { level: 'debug', stream: logs.stream } });
  t = await tenantWithSession(stack.app, 'logged');
  base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await stack?.close();
});

const noSecretsIn = (lines: string[], secrets: string[]) => {
  expect(lines.length).toBeGreaterThan(0);
  for (const secret of secrets) {
    const leaking = lines.filter((l) => l.includes(secret));
    expect(leaking, `a log line contains ${secret.slice(0, 6)}…`).toEqual([]);
  }
};

describe('gateway logs', () => {
  it('never contain the operator token, API keys, cookies or credential query parameters', async () => {
    const from = logs.lines.length;
    // ?token= of the browser login, with another parameter around it
    const login = await fetch(`${base}/admin/inspector?session=${t.sessionId}&token=${OPERATOR}`, {
      redirect: 'manual',
    });
    expect(login.status).toBe(302);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    await fetch(`${base}/admin/inspector`, { headers: { cookie } });
    await fetch(`${base}/admin/queues?token=${OPERATOR}`, { redirect: 'manual' });
    await fetch(`${base}/admin/queues?token=wrong-${OPERATOR}`, { redirect: 'manual' });
    // API key in the header and (wrongly) in the query; other credential parameters
    await fetch(`${base}/v1/sessions/${t.sessionId}?api_key=${t.apiKey}&access_token=${t.apiKey}x`, {
      headers: t.auth,
    });
    await fetch(`${base}/v1/sessions/nope?token=${t.apiKey}`, { headers: bearer(`${t.apiKey}zz`) });
    // A framework error (bad percent-encoding) logs the URL too
    await fetch(`${base}/v1/sessions/%E0%A4%A?token=${OPERATOR}`, { headers: t.auth });
    await fetch(`${base}/metrics?token=${OPERATOR}`, { headers: bearer(OPERATOR) });
    const lines = logs.lines.slice(from);
    noSecretsIn(lines, [OPERATOR, t.apiKey, cookie.split('=')[1]!]);
    // The request lines are still there, with the parameter names and [REDACTED] values.
    const urls = lines
      .map((l) => JSON.parse(l) as { req?: { url?: string } })
      .flatMap((l) => (l.req?.url ? [l.req.url] : []));
    expect(urls).toContain(`/admin/inspector?session=${t.sessionId}&token=[REDACTED]`);
    expect(urls).toContain(`/v1/sessions/${t.sessionId}?api_key=[REDACTED]&access_token=[REDACTED]`);
  });

  it('redact credential fields of logged objects (headers, options)', async () => {
    const from = logs.lines.length;
    stack.app.log.info(
      {
        headers: {
          authorization: `Bearer ${t.apiKey}`,
          cookie: 'loopline_operator=abc',
          'x-api-key': t.apiKey,
        },
        options: { apiKey: t.apiKey, nested: { password: OPERATOR } },
        url: `https://example.test/cb?token=${OPERATOR}&ok=1`,
      },
      'object with secrets',
    );
    stack.app.log.error({ err: new Error(`fetch https://x.test/a?token=${OPERATOR} failed`) }, 'failure');
    const lines = logs.lines.slice(from);
    noSecretsIn(lines, [OPERATOR, t.apiKey, 'abc']);
    const line = JSON.parse(lines[0]!);
    expect(line.headers.authorization).toBe('[REDACTED]');
    expect(line.url).toBe('https://example.test/cb?token=[REDACTED]&ok=1');
  });
});

describe('worker logs', () => {
  it('redact the same fields and query parameters', () => {
    const out = capture();
    const log = createWorkerLogger('info', out.stream);
    log.info(
      {
        tool: 'search',
        request: {
          headers: { authorization: 'Bearer tenant-secret-1' },
          url: 'http://h/x?token=tenant-secret-2',
        },
      },
      'webhook call',
    );
    log.warn({ url: 'http://user:tenant-secret-3@h/x?sig=tenant-secret-4' }, 'webhook refused');
    log.error({ err: new Error('GET http://h/y?api_key=tenant-secret-5 failed') }, 'tool failed');
    log.info('calling http://h/z?token=tenant-secret-6');
    noSecretsIn(out.lines, [
      'tenant-secret-1',
      'tenant-secret-3',
      'tenant-secret-4',
      'tenant-secret-5',
      'tenant-secret-6',
    ]);
    expect(JSON.parse(out.lines[0]!).request.headers.authorization).toBe('[REDACTED]');
  });
});

describe('operator browser login', () => {
  it('posts the token once and gets a signed, expiring HttpOnly SameSite=Strict session cookie', async () => {
    const page = await fetch(`${base}/admin/login`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<form method="post" action="/admin/login">');

    const wrong = await fetch(`${base}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'wrong' }),
      redirect: 'manual',
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();

    const ok = await fetch(`${base}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: OPERATOR, next: '/admin/queues' }),
      redirect: 'manual',
    });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/admin/queues');
    const setCookie = ok.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\/admin(;|$)/);
    const maxAge = Number(/Max-Age=(\d+)/.exec(setCookie)?.[1]);
    expect(maxAge).toBeGreaterThan(0);
    expect(maxAge).toBeLessThanOrEqual(8 * 3600);
    expect(setCookie).not.toContain(OPERATOR);
    expect(setCookie).not.toMatch(/Secure/); // plain HTTP here; HTTPS adds it
    const cookie = setCookie.split(';')[0]!;

    // One session for both operator pages; /v1/admin stays bearer-only.
    expect((await fetch(`${base}/admin/queues`, { headers: { cookie } })).status).toBe(200);
    expect((await fetch(`${base}/admin/inspector`, { headers: { cookie } })).status).toBe(200);
    expect((await fetch(`${base}/v1/admin/sessions`, { headers: { cookie } })).status).toBe(401);

    // A tampered or forged cookie is refused; so is one that has expired.
    const [, value] = cookie.split('=');
    const parts = value!.split('.');
    const later = `${parts[0]}.${(Number.parseInt(parts[1]!, 36) + 86_400).toString(36)}.${parts[2]}.${parts[3]}`;
    for (const forged of [`${value}x`, later, 'v1.zzzzzz.nonce.mac']) {
      const res = await fetch(`${base}/admin/queues`, { headers: { cookie: `loopline_operator=${forged}` } });
      expect(res.status).toBe(401);
    }
    const expiredStack = await startStack('log_redaction_exp', { operatorSessionMs: 60_000 });
    try {
      const { issueOperatorSession } = await import('../../apps/gateway/src/plugins/operator-session.ts');
      const expired = issueOperatorSession(OPERATOR, 60_000, Date.now() - 120_000);
      const res = await expiredStack.app.inject({
        method: 'GET',
        url: '/admin/queues',
        headers: { cookie: `loopline_operator=${expired}` },
      });
      expect(res.statusCode).toBe(401);
    } finally {
      await expiredStack.close();
    }
  });

  it('adds Secure when the request came over HTTPS (through a trusted proxy)', async () => {
    const behindTls = await startStack('log_redaction_tls', { trustProxy: ['127.0.0.1'] });
    try {
      const res = await behindTls.app.inject({
        method: 'POST',
        url: '/admin/login',
        headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
        payload: { token: OPERATOR },
      });
      expect(res.statusCode).toBe(303);
      expect(String(res.headers['set-cookie'])).toMatch(/; Secure/);
      // An untrusted client cannot claim HTTPS.
      const spoofed = await stack.app.inject({
        method: 'POST',
        url: '/admin/login',
        headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
        payload: { token: OPERATOR },
      });
      expect(String(spoofed.headers['set-cookie'])).not.toMatch(/Secure/);
    } finally {
      await behindTls.close();
    }
  });

  it('?token= is only a redirect that drops the token from the URL; a browser without a session goes to the login page', async () => {
    const res = await fetch(`${base}/admin/inspector?token=${OPERATOR}&session=${t.sessionId}`, {
      redirect: 'manual',
    });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`/admin/inspector?session=${t.sessionId}`);
    expect(res.headers.get('location')).not.toContain(OPERATOR);
    expect(res.headers.get('set-cookie')).toMatch(/Max-Age=\d+/);
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');

    const browser = await fetch(`${base}/admin/queues`, {
      headers: { accept: 'text/html' },
      redirect: 'manual',
    });
    expect(browser.status).toBe(303);
    expect(browser.headers.get('location')).toBe('/admin/login?next=%2Fadmin%2Fqueues');
    // An open redirect is not possible through next=.
    const evil = await fetch(`${base}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: OPERATOR, next: '//evil.example/admin/x' }),
      redirect: 'manual',
    });
    expect(evil.status).toBe(303);
    expect(evil.headers.get('location')).toBe('/admin/inspector');
  });
});
