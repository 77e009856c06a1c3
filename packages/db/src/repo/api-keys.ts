import { createHash, randomBytes } from 'node:crypto';
import { newId, type TenantLimits, tenantLimits } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';

// API keys: `ll_` + 32 random base62 characters. Only the sha256 hex is stored, so a leaked
// table grants nothing; `prefix` (the first 8 characters) lets a user tell keys apart.

const KEY_PREFIX = 'll_';
const KEY_RANDOM_CHARS = 32;
const DISPLAY_PREFIX_CHARS = 8;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform base62: bytes ≥ 248 (= 4 × 62) are rejected so no character is favoured. */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** The stored form of a key: its sha256, hex. */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

export interface ApiKeyInfo {
  id: string;
  prefix: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/** Creates a key for the tenant; the key itself is returned once and never stored. */
export async function createApiKey(db: Db, tenantId: string): Promise<{ keyId: string; apiKey: string }> {
  const apiKey = KEY_PREFIX + randomBase62(KEY_RANDOM_CHARS);
  const keyId = newId('key');
  await db
    .insertInto('api_keys')
    .values({
      id: keyId,
      tenant_id: tenantId,
      key_hash: hashApiKey(apiKey),
      prefix: apiKey.slice(0, DISPLAY_PREFIX_CHARS),
    })
    .execute();
  return { keyId, apiKey };
}

/** Revokes a key of this tenant; false when it does not exist or was already revoked. */
export async function revokeApiKey(db: Db, tenantId: string, keyId: string): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: sql<Date>`now()` })
    .where('id', '=', keyId)
    .where('tenant_id', '=', tenantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  forgetKey(keyId);
  return result.numUpdatedRows > 0n;
}

/** The tenant's keys (prefix and dates, never a hash), oldest first. */
export async function listApiKeys(db: Db, tenantId: string): Promise<ApiKeyInfo[]> {
  const rows = await db
    .selectFrom('api_keys')
    .select(['id', 'prefix', 'created_at', 'revoked_at'])
    .where('tenant_id', '=', tenantId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ id: r.id, prefix: r.prefix, createdAt: r.created_at, revokedAt: r.revoked_at }));
}

/**
 * The tenant of a presented key, or undefined (unknown, malformed or revoked), with the tenant's
 * limits (read on every request, so a settings change applies at once). Every call does the same
 * work, one hash and one indexed lookup, whatever the input looks like.
 */
export async function authenticateApiKey(
  db: Db,
  apiKey: string,
): Promise<{ tenantId: string; keyId: string; limits: TenantLimits } | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .innerJoin('tenants', 'tenants.id', 'api_keys.tenant_id')
    .select(['api_keys.id', 'api_keys.tenant_id', 'api_keys.revoked_at', 'tenants.settings'])
    .where('api_keys.key_hash', '=', hashApiKey(apiKey))
    .executeTakeFirst();
  if (!row || row.revoked_at !== null) return undefined;
  return { tenantId: row.tenant_id, keyId: row.id, limits: tenantLimits(row.settings) };
}

export type ApiKeyAuth = { tenantId: string; keyId: string; limits: TenantLimits };

// Valid keys are remembered per process for the caller's TTL (gateway: LOOPLINE_AUTH_CACHE_MS); a
// revoke or a limits change drops them here at once, elsewhere within the TTL. Invalid keys are never
// remembered, so a new key works at once.
const AUTH_CACHE_MAX = 10_000;
const authCache = new Map<string, { auth: ApiKeyAuth; expiresAt: number }>();

/** authenticateApiKey with a per-process cache of valid keys (`ttlMs` 0: no cache). */
export async function authenticateApiKeyCached(
  db: Db,
  apiKey: string,
  ttlMs: number,
): Promise<ApiKeyAuth | undefined> {
  if (ttlMs <= 0) return authenticateApiKey(db, apiKey);
  const hash = hashApiKey(apiKey);
  const now = Date.now();
  const hit = authCache.get(hash);
  if (hit && hit.expiresAt > now) return hit.auth;
  const auth = await authenticateApiKey(db, apiKey);
  if (!auth) {
    authCache.delete(hash);
    return undefined;
  }
  if (authCache.size >= AUTH_CACHE_MAX) authCache.clear();
  authCache.set(hash, { auth, expiresAt: now + ttlMs });
  return auth;
}

/** The cached authentication of a key hash, without asking PostgreSQL (undefined: not cached). */
export function cachedApiKey(keyHash: string, now = Date.now()): ApiKeyAuth | undefined {
  const hit = authCache.get(keyHash);
  return hit && hit.expiresAt > now ? hit.auth : undefined;
}

function forgetKey(keyId: string): void {
  for (const [hash, entry] of authCache) if (entry.auth.keyId === keyId) authCache.delete(hash);
}

/** Drops the cached keys of a tenant (its limits changed). */
export function forgetTenantKeys(tenantId: string): void {
  for (const [hash, entry] of authCache) if (entry.auth.tenantId === tenantId) authCache.delete(hash);
}
