import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { TenantLimits } from '@loopline/core';
import { authenticateApiKeyCached, cachedApiKey, hashApiKey } from '@loopline/db';
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { GatewayDeps } from '../deps.ts';
import { authGuard } from '../lib/auth-guard.ts';
import { HttpError } from '../lib/http-error.ts';

// Authentication. Tenants: `Authorization: Bearer <api key>` on /v1/*, resolved to the
// `request.tenant` decorator. Operators: `Bearer <LOOPLINE_OPERATOR_TOKEN>` on /v1/admin/* and
// Bull Board; browsers may pass the token once as `?token=` to Bull Board, which trades it for
// an HttpOnly cookie and redirects to the same page without it.

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

export function tenantAuth(deps: GatewayDeps): onRequestAsyncHookHandler {
  const cacheMs = deps.authCacheMs ?? 2_000;
  // Failed lookups are throttled per client address and negative-cached (lib/auth-guard.ts).
  const guard = authGuard({
    failuresPerMinute: deps.authThrottle?.failuresPerMinute ?? 30,
    negativeCacheMs: deps.authThrottle?.negativeCacheMs ?? 30_000,
  });
  return async (request, reply) => {
    const key = bearer(request.headers.authorization);
    if (!key) throw new HttpError('unauthorized', 'Missing API key: send Authorization: Bearer <api key>');
    const hash = hashApiKey(key);
    const invalid = () => new HttpError('unauthorized', 'Invalid or revoked API key');
    if (guard.knownBad(hash)) {
      guard.failed(request.ip, undefined);
      throw invalid();
    }
    const retryAfter = guard.throttled(request.ip);
    let auth = retryAfter === undefined ? undefined : cachedApiKey(hash);
    if (retryAfter !== undefined && !auth) {
      reply.header('retry-after', String(retryAfter));
      throw new HttpError(
        'rate_limited',
        `Too many failed authentications from this address; retry in ${retryAfter} s`,
        { retryAfterSeconds: retryAfter },
      );
    }
    auth ??= await authenticateApiKeyCached(deps.db, key, cacheMs);
    if (!auth) {
      guard.failed(request.ip, hash);
      throw invalid();
    }
    request.tenant = { id: auth.tenantId, keyId: auth.keyId, limits: auth.limits };
    // Every later log line of this request (including Fastify's own) carries the tenant.
    request.log = request.log.child({ tenantId: auth.tenantId });
    reply.log = request.log;
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Constant-time comparison (of digests, so lengths never leak either). */
function sameSecret(a: string, b: string): boolean {
  return b.length > 0 && timingSafeEqual(digest(a), digest(b));
}

export function operatorAuth(operatorToken: string): onRequestAsyncHookHandler {
  return async (request) => {
    const token = bearer(request.headers.authorization);
    if (!token || !sameSecret(token, operatorToken))
      throw new HttpError(
        'unauthorized',
        'Operator token required: send Authorization: Bearer <operator token>',
      );
  };
}

export const OPERATOR_COOKIE = 'loopline_operator';

/** The cookie holds a MAC of the token, not the token itself. */
function cookieValue(operatorToken: string): string {
  return createHmac('sha256', operatorToken).update('loopline bull-board session').digest('base64url');
}

function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

/** Bull Board: bearer header, the session cookie, or a one-time `?token=` that sets the cookie. */
export function operatorBrowserAuth(operatorToken: string, basePath: string) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const token = bearer(request.headers.authorization);
    if (token && sameSecret(token, operatorToken)) return;
    const cookie = readCookie(request.headers.cookie, OPERATOR_COOKIE);
    if (cookie && sameSecret(cookie, cookieValue(operatorToken))) return;
    const url = new URL(request.url, 'http://gateway.invalid');
    const query = url.searchParams.get('token');
    if (query && sameSecret(query, operatorToken)) {
      url.searchParams.delete('token');
      const secure = request.protocol === 'https' ? '; Secure' : '';
      reply
        .header(
          'set-cookie',
          `${OPERATOR_COOKIE}=${cookieValue(operatorToken)}; Path=${basePath}; HttpOnly; SameSite=Strict${secure}`,
        )
        .redirect(`${url.pathname}${url.search}`, 302);
      return reply;
    }
    throw new HttpError('unauthorized', 'Operator token required (Authorization: Bearer, or ?token= once)');
  };
}
