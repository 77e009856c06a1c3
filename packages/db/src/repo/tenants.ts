import {
  applyLimitsPatch,
  newId,
  type TenantLimits,
  type TenantLimitsPatch,
  tenantLimits,
} from '@loopline/core';
import type { Db } from '../client.ts';
import { toJson } from '../tables/columns.ts';
import { createApiKey, forgetTenantKeys } from './api-keys.ts';
import { type TenantInfo, toTenant } from './mappers.ts';

// Tenants: created together with their first API key (the only time the key is shown), and their
// settings (`limits`: concurrency, token budget, request rate).

/** Creates a tenant with its first API key (returned once). */
export async function createTenant(
  db: Db,
  input: { name: string; settings?: Record<string, unknown> },
): Promise<{ tenant: TenantInfo; apiKey: string; keyId: string }> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .insertInto('tenants')
      .values({ id: newId('ten'), name: input.name, settings: toJson(input.settings ?? {}) })
      .returningAll()
      .executeTakeFirstOrThrow();
    const { keyId, apiKey } = await createApiKey(trx, row.id);
    return { tenant: toTenant(row), apiKey, keyId };
  });
}

/** The tenant, or undefined. */
export async function getTenant(db: Db, tenantId: string): Promise<TenantInfo | undefined> {
  const row = await db.selectFrom('tenants').selectAll().where('id', '=', tenantId).executeTakeFirst();
  return row ? toTenant(row) : undefined;
}

/**
 * Applies a limits patch to the tenant's settings under the row lock (concurrent patches of
 * different limits both land); other settings keys are kept. Undefined when the tenant is unknown.
 */
export async function updateTenantLimits(
  db: Db,
  tenantId: string,
  patch: TenantLimitsPatch,
): Promise<TenantInfo | undefined> {
  const result = await db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('tenants')
      .select('settings')
      .where('id', '=', tenantId)
      .forUpdate()
      .executeTakeFirst();
    if (!row) return undefined;
    const limits = applyLimitsPatch(tenantLimits(row.settings), patch);
    const updated = await trx
      .updateTable('tenants')
      .set({ settings: toJson({ ...row.settings, limits }) })
      .where('id', '=', tenantId)
      .returningAll()
      .executeTakeFirstOrThrow();
    return toTenant(updated);
  });
  // This process sees the change at once; other processes within their cache TTL (below).
  limitsCache.delete(tenantId);
  forgetTenantKeys(tenantId);
  return result;
}

/** The tenant's limits ({} when it sets none, or is unknown). */
export async function getTenantLimits(db: Db, tenantId: string): Promise<TenantLimits> {
  const row = await db.selectFrom('tenants').select('settings').where('id', '=', tenantId).executeTakeFirst();
  return tenantLimits(row?.settings);
}

// The worker reads a tenant's limits before every model call and they change rarely: a change by
// another process (the gateway) applies within this TTL, a delay the slot semaphore tolerates already.
export const TENANT_LIMITS_TTL_MS = 1_000;
const LIMITS_CACHE_MAX = 10_000;
const limitsCache = new Map<string, { limits: TenantLimits; expiresAt: number }>();

/** getTenantLimits, remembered for `ttlMs` per process (see TENANT_LIMITS_TTL_MS). */
export async function getTenantLimitsCached(
  db: Db,
  tenantId: string,
  ttlMs: number = TENANT_LIMITS_TTL_MS,
): Promise<TenantLimits> {
  const now = Date.now();
  const hit = limitsCache.get(tenantId);
  if (hit && hit.expiresAt > now) return hit.limits;
  const limits = await getTenantLimits(db, tenantId);
  if (limitsCache.size >= LIMITS_CACHE_MAX) limitsCache.clear();
  limitsCache.set(tenantId, { limits, expiresAt: now + ttlMs });
  return limits;
}
