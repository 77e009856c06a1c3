import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthGuard } from '../lib/auth-guard.ts';

// The operator's browser session (inspector, Bull Board). The operator token is posted once to
// /admin/login (a form, a JSON body or an Authorization header); the answer is a session cookie:
//
//   loopline_operator=v1.<expiry>.<nonce>.<mac>   HttpOnly; SameSite=Strict; Path=/admin;
//                                                 Max-Age=<lifetime>; Secure when over HTTPS
//
// The value is signed, never the token: mac = HMAC-SHA256 over version, expiry and nonce with a
// key derived from the operator token, so every gateway process accepts it without shared state,
// it expires (LOOPLINE_OPERATOR_SESSION_MS, default 8 h), and rotating the token ends every session.
// `?token=` on a page still works, only as a redirect that sets the cookie and drops the token
// from the URL (log lines never show it either: plugins/log-redaction.ts).

export const OPERATOR_COOKIE = 'loopline_operator';
export const OPERATOR_COOKIE_PATH = '/admin';
export const LOGIN_PATH = '/admin/login';
export const DEFAULT_OPERATOR_SESSION_MS = 8 * 3_600_000;

const VERSION = 'v1';

function sessionKey(operatorToken: string): Buffer {
  return createHmac('sha256', operatorToken).update('loopline operator session key v1').digest();
}

function mac(operatorToken: string, payload: string): string {
  return createHmac('sha256', sessionKey(operatorToken)).update(payload).digest('base64url');
}

/** A new signed session value that expires `ttlMs` from `now`. */
export function issueOperatorSession(operatorToken: string, ttlMs: number, now = Date.now()): string {
  const payload = `${VERSION}.${Math.floor((now + ttlMs) / 1000).toString(36)}.${randomBytes(12).toString('base64url')}`;
  return `${payload}.${mac(operatorToken, payload)}`;
}

/** The value was signed with this operator token and has not expired. */
export function verifyOperatorSession(operatorToken: string, value: string, now = Date.now()): boolean {
  const parts = value.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) return false;
  const payload = parts.slice(0, 3).join('.');
  const expected = Buffer.from(mac(operatorToken, payload));
  const given = Buffer.from(parts[3]!);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
  const expiresAt = Number.parseInt(parts[1]!, 36) * 1000;
  return Number.isFinite(expiresAt) && expiresAt > now;
}

/** The value of one cookie in a Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

/** Set-Cookie of a new session (Secure when the request came over HTTPS). */
export function sessionCookie(request: FastifyRequest, value: string, ttlMs: number): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  const maxAge = Math.floor(ttlMs / 1000);
  return `${OPERATOR_COOKIE}=${value}; Path=${OPERATOR_COOKIE_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure}`;
}

function clearedCookie(request: FastifyRequest): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${OPERATOR_COOKIE}=; Path=${OPERATOR_COOKIE_PATH}; Max-Age=0; HttpOnly; SameSite=Strict${secure}`;
}

/** Where to go after login: a path under /admin/ only (no open redirect). */
export function safeNext(next: unknown): string {
  if (typeof next !== 'string') return '/admin/inspector';
  if (!/^\/admin\/[^\\]*$/.test(next) || next.startsWith('//') || next.startsWith(LOGIN_PATH)) {
    return '/admin/inspector';
  }
  return next;
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function loginPage(next: string, error?: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Loopline operator login</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main><h1>Loopline operator login</h1>
${error ? `<p role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="${LOGIN_PATH}">
<input type="hidden" name="next" value="${escapeHtml(next)}">
<label>Operator token <input type="password" name="token" autocomplete="current-password" required autofocus></label>
<button type="submit">Sign in</button>
</form></main></body></html>
`;
}

const LOGIN_CSP = "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

function page(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply
    .code(status)
    .header('content-security-policy', LOGIN_CSP)
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .type('text/html; charset=utf-8')
    .send(html);
}

export interface OperatorLoginOptions {
  operatorToken: string;
  /** Session lifetime (default 8 h). */
  sessionMs?: number;
  /** Checks a presented token in constant time. */
  sameSecret: (a: string, b: string) => boolean;
  /** The app's guard against guessing the token, shared with the bearer and `?token=` routes. */
  guard: AuthGuard;
}

/** GET/POST /admin/login and POST /admin/logout (hidden from the OpenAPI document). */
export const operatorLoginRoutes: FastifyPluginAsync<OperatorLoginOptions> = async (app, opts) => {
  const ttlMs = opts.sessionMs ?? DEFAULT_OPERATOR_SESSION_MS;
  // Wrong tokens: 10 a minute per address on all operator routes together, then 429 (the token is
  // the only secret guarding them).
  const { guard } = opts;
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    },
  );

  app.get(LOGIN_PATH, { schema: { hide: true } }, async (request, reply) =>
    page(reply, 200, loginPage(safeNext((request.query as Record<string, unknown>).next))),
  );

  app.post(LOGIN_PATH, { schema: { hide: true } }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const next = safeNext(body.next);
    const retryAfter = guard.throttled(request.ip);
    if (retryAfter !== undefined) {
      reply.header('retry-after', String(retryAfter));
      return page(reply, 429, loginPage(next, `Too many wrong tokens; retry in ${retryAfter} s`));
    }
    const header = /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    const token = typeof body.token === 'string' ? body.token : header;
    if (!token || !opts.sameSecret(token, opts.operatorToken)) {
      guard.failed(request.ip, undefined);
      return page(reply, 401, loginPage(next, 'Wrong operator token'));
    }
    reply.header(
      'set-cookie',
      sessionCookie(request, issueOperatorSession(opts.operatorToken, ttlMs), ttlMs),
    );
    return reply.header('cache-control', 'no-store').redirect(next, 303);
  });

  app.post('/admin/logout', { schema: { hide: true } }, async (request, reply) =>
    reply.header('set-cookie', clearedCookie(request)).redirect(LOGIN_PATH, 303),
  );
};
