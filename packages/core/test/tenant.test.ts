import { describe, expect, it } from 'vitest';
import { applyLimitsPatch, TenantLimitsPatch, TenantSettings, tenantLimits } from '../src/index.ts';

// Tenant limits: read leniently from stored settings, patched strictly.

describe('tenant limits', () => {
  it('reads the valid limits of stored settings and ignores the rest', () => {
    expect(tenantLimits(undefined)).toEqual({});
    expect(tenantLimits({})).toEqual({});
    expect(
      tenantLimits({ limits: { maxConcurrentSessions: 3, tokensPerMinute: 0, requestsPerMinute: 'x' } }),
    ).toEqual({ maxConcurrentSessions: 3 });
    expect(tenantLimits({ limits: { tokensPerMinute: 1.5, requestsPerMinute: 60 }, other: true })).toEqual({
      requestsPerMinute: 60,
    });
  });

  it('patches: numbers set, null removes, absent keys stay', () => {
    const current = { maxConcurrentSessions: 3, tokensPerMinute: 1000 };
    expect(applyLimitsPatch(current, { tokensPerMinute: null, requestsPerMinute: 10 })).toEqual({
      maxConcurrentSessions: 3,
      requestsPerMinute: 10,
    });
    expect(applyLimitsPatch(current, {})).toEqual(current);
  });

  it('a patch is strict: positive integers or null, known keys only', () => {
    expect(TenantLimitsPatch.safeParse({ maxConcurrentSessions: 0 }).success).toBe(false);
    expect(TenantLimitsPatch.safeParse({ tokensPerMinute: -5 }).success).toBe(false);
    expect(TenantLimitsPatch.safeParse({ requestsPerMinute: 2.5 }).success).toBe(false);
    expect(TenantLimitsPatch.safeParse({ burst: 3 }).success).toBe(false);
    expect(TenantLimitsPatch.parse({ maxConcurrentSessions: null, tokensPerMinute: 5 })).toEqual({
      maxConcurrentSessions: null,
      tokensPerMinute: 5,
    });
    expect(TenantSettings.parse({ theme: 'dark' })).toEqual({ theme: 'dark', limits: {} });
  });
});
