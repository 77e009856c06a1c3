import { z } from 'zod';

// Tenant settings (tenants.settings jsonb) and session kinds: the inputs of fairness. The gateway
// validates a PATCH with TenantLimitsPatch and stores TenantSettings; the worker and the gateway
// read them back with tenantLimits(), which never throws on an old or hand-edited row.

const PositiveInt = z.number().int().positive().max(1_000_000_000);

export const TenantLimits = z.object({
  /** Sessions of the tenant running at once; the others wait in the queue (status `queued`). */
  maxConcurrentSessions: PositiveInt.optional(),
  /** Model tokens (prompt + output, provider-reported) per minute window; calls wait for budget. */
  tokensPerMinute: PositiveInt.optional(),
  /** Gateway requests per API key per minute; over it, 429 `rate_limited`. */
  requestsPerMinute: PositiveInt.optional(),
});
export type TenantLimits = z.infer<typeof TenantLimits>;

/** A PATCH of the limits: a number sets a limit, null removes it (the deployment default applies). */
export const TenantLimitsPatch = z.strictObject({
  maxConcurrentSessions: PositiveInt.nullable().optional(),
  tokensPerMinute: PositiveInt.nullable().optional(),
  requestsPerMinute: PositiveInt.nullable().optional(),
});
export type TenantLimitsPatch = z.infer<typeof TenantLimitsPatch>;

export const TenantSettings = z.looseObject({ limits: TenantLimits.default({}) });
export type TenantSettings = z.infer<typeof TenantSettings>;

/** The limits stored in a tenant's settings; fields that are missing or invalid are absent. */
export function tenantLimits(settings: unknown): TenantLimits {
  const raw = (settings as { limits?: Record<string, unknown> } | null)?.limits ?? {};
  const out: TenantLimits = {};
  for (const key of Object.keys(TenantLimits.shape) as (keyof TenantLimits)[]) {
    const parsed = PositiveInt.safeParse(raw[key]);
    if (parsed.success) out[key] = parsed.data;
  }
  return out;
}

/** The limits after a PATCH: given numbers replace, nulls remove, absent keys stay. */
export function applyLimitsPatch(current: TenantLimits, patch: TenantLimitsPatch): TenantLimits {
  const out: TenantLimits = { ...current };
  for (const key of Object.keys(patch) as (keyof TenantLimitsPatch)[]) {
    const value = patch[key];
    if (value === null) delete out[key];
    else if (value !== undefined) out[key] = value;
  }
  return out;
}

/**
 * interactive: created through POST /v1/sessions; batch: created by POST /v1/batches. Batch
 * sessions' jobs run at a lower BullMQ priority than interactive ones.
 */
export const SessionKind = z.enum(['interactive', 'batch']);
export type SessionKind = z.infer<typeof SessionKind>;
