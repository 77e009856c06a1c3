import { createHash, timingSafeEqual } from 'node:crypto';
import type { TenantLimits } from '@loopline/core';
import { type ApiKeyAuth, authenticateApiKeyCached, cachedApiKey, hashApiKey } from '@loopline/db';
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { type AuthGuard, authGuard } from '../lib/auth-guard.ts';
import { HttpError } from '../lib/http-error.ts';
import {
  DEFAULT_OPERATOR_SESSION_MS,
  issueOperatorSession,
  LOGIN_PATH,
  OPERATOR_COOKIE,
  readCookie,
  sessionCookie,
  verifyOperatorSession,
} from './operator-session.ts';
import { bindLogContext, routeSessionId } from './request-log.ts';

// Authentication. Tenants: `Authorization: Bearer <api key>` on /v1/*, resolved to the
// `request.tenant` decorator. Operators: `Bearer <LOOPLINE_OPERATOR_TOKEN>` on /v1/admin/* and
// /metrics; browsers sign in at /admin/login (or pass `?token=` once) and get a signed, expiring
// session cookie for the inspector and Bull Board (plugins/operator-session.ts).

export interface TenantContext {
  id: string;
  keyId: string;
  /** The tenant's limits (read with the key; at most `authCacheMs` old, GatewayDeps). */
  limits: TenantLimits;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the tenant auth hook on /v1/* (null elsewhere). */
    tenant: TenantContext | null;
  }
}

const MAX_TOKEN = 512;

function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  const token = match?.[1];
  return token && token.length <= MAX_TOKEN ? token : undefined;
}

/** The authenticated tenant of a /v1 request. */
export function tenantOf(request: FastifyRequest): TenantContext {
  if (!request.tenant) throw new HttpError('unauthorized', 'Missing or invalid API key');
  return request.tenant;
}

export function tenantAuth(deps: GatewayDeps): onRequestHookHandler {
  const cacheMs = deps.authCacheMs ?? 2_000;
  // Failed lookups are throttled per client address and negative-cached (lib/auth-guard.ts).
  const guard = authGuard({
    failuresPerMinute: deps.authThrottle?.failuresPerMinute ?? 30,
    negativeCacheMs: deps.authThrottle?.negativeCacheMs ?? 30_000,
  });
  const accept = (request: FastifyRequest, reply: FastifyReply, auth: ApiKeyAuth) => {
    request.tenant = { id: auth.tenantId, keyId: auth.keyId, limits: auth.limits };
    // Every later log line of this request (including Fastify's own) carries the tenant, and the
    // session on /sessions/:id routes: bound here at once, one child logger (request-log.ts).
    bindLogContext(request, reply, { tenantId: auth.tenantId, sessionId: routeSessionId(request) });
  };
  // A callback hook: a key this process has checked within authCacheMs is answered without a
  // promise or a second hash; only a lookup in PostgreSQL waits.
  return (request, reply, done) => {
    const key = bearer(request.headers.authorization);
    if (!key)
      return done(new HttpError('unauthorized', 'Missing API key: send Authorization: Bearer <api key>'));
    const hash = hashApiKey(key);
    const invalid = () => new HttpError('unauthorized', 'Invalid or revoked API key');
    if (guard.knownBad(hash)) {
      guard.failed(request.ip, undefined);
      return done(invalid());
    }
    const retryAfter = guard.throttled(request.ip);
    // A throttled address is still served for a key already known good (from the cache).
    const cached = retryAfter !== undefined || cacheMs > 0 ? cachedApiKey(hash) : undefined;
    if (cached) {
      accept(request, reply, cached);
      return done();
    }
    if (retryAfter !== undefined) {
      reply.header('retry-after', String(retryAfter));
      return done(
        new HttpError(
          'rate_limited',
          `Too many failed authentications from this address; retry in ${retryAfter} s`,
          { retryAfterSeconds: retryAfter },
        ),
      );
    }
    authenticateApiKeyCached(deps.db, key, cacheMs).then((auth) => {
      if (!auth) {
        guard.failed(request.ip, hash);
        return done(invalid());
      }
      accept(request, reply, auth);
      done();
    }, done);
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Constant-time comparison (of digests, so lengths never leak either). */
function sameSecret(a: string, b: string): boolean {
  return b.length > 0 && timingSafeEqual(digest(a), digest(b));
}

/** Wrong operator tokens a client address may present per minute, on every route that takes one. */
export const OPERATOR_FAILURES_PER_MINUTE = 10;

/** The guard against guessing the operator token: one per app, shared by every route that takes it. */
export function operatorGuard(): AuthGuard {
  return authGuard({ failuresPerMinute: OPERATOR_FAILURES_PER_MINUTE, negativeCacheMs: 0 });
}

/**
 * Whether a presented operator token is the token. A wrong one counts against the client address;
 * past OPERATOR_FAILURES_PER_MINUTE the address gets 429 for the rest of the minute, whatever it
 * presents (answering a right guess then would tell it apart), so the token cannot be guessed faster
 * on the bearer routes, `?token=` or the login form than on any one of them.
 */
export function operatorTokenMatches(
  request: FastifyRequest,
  reply: FastifyReply,
  presented: string,
  operatorToken: string,
  guard: AuthGuard,
): boolean {
  const retryAfter = guard.throttled(request.ip);
  if (retryAfter !== undefined) {
    reply.header('retry-after', String(retryAfter));
    throw new HttpError(
      'rate_limited',
      `Too many wrong operator tokens from this address; retry in ${retryAfter} s`,
      { retryAfterSeconds: retryAfter },
    );
  }
  if (sameSecret(presented, operatorToken)) return true;
  guard.failed(request.ip, undefined);
  return false;
}

export function operatorAuth(operatorToken: string, guard: AuthGuard): onRequestAsyncHookHandler {
  return async (request, reply) => {
    const token = bearer(request.headers.authorization);
    if (!token || !operatorTokenMatches(request, reply, token, operatorToken, guard))
      throw new HttpError(
        'unauthorized',
        'Operator token required: send Authorization: Bearer <operator token>',
      );
  };
}

export interface BrowserAuthOptions {
  /** Lifetime of the session cookie set by `?token=` (default 8 h). */
  sessionMs?: number | undefined;
  /** The app's guard against guessing the token (operatorGuard). */
  guard: AuthGuard;
}

/**
 * Operator pages (inspector, Bull Board): bearer header or the signed session cookie
 * (plugins/operator-session.ts). `?token=` is only a redirect: it sets the cookie and sends the
 * browser to the same URL without the token. A browser without either goes to the login page.
 */
export function operatorBrowserAuth(operatorToken: string, opts: BrowserAuthOptions) {
  const ttlMs = opts.sessionMs ?? DEFAULT_OPERATOR_SESSION_MS;
  const matches = (request: FastifyRequest, reply: FastifyReply, presented: string) =>
    operatorTokenMatches(request, reply, presented, operatorToken, opts.guard);
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const token = bearer(request.headers.authorization);
    if (token && matches(request, reply, token)) return;
    const cookie = readCookie(request.headers.cookie, OPERATOR_COOKIE);
    if (cookie && verifyOperatorSession(operatorToken, cookie)) return;
    const url = new URL(request.url, 'http://gateway.invalid');
    const query = url.searchParams.get('token');
    if (query !== null) {
      url.searchParams.delete('token');
      const target = `${url.pathname}${url.search}`;
      if (matches(request, reply, query)) {
        reply
          .header('set-cookie', sessionCookie(request, issueOperatorSession(operatorToken, ttlMs), ttlMs))
          .header('cache-control', 'no-store')
          .header('referrer-policy', 'no-referrer')
          .redirect(target, 302);
        return reply;
      }
    }
    if (request.method === 'GET' && /text\/html/.test(request.headers.accept ?? '') && query === null) {
      reply.redirect(`${LOGIN_PATH}?next=${encodeURIComponent(`${url.pathname}${url.search}`)}`, 303);
      return reply;
    }
    throw new HttpError(
      'unauthorized',
      `Operator token required: sign in at ${LOGIN_PATH}, or send Authorization: Bearer <operator token>`,
    );
  };
}

export { sameSecret };
