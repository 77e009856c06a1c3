// Caps on open SSE streams per API key and per tenant, counted in this gateway process (each
// stream holds a socket and a watcher here; Redis connections no longer grow with streams, see
// packages/queue/src/event-hub.ts). With N gateway processes a tenant can hold up to N × the cap.

export interface StreamLimits {
  /** 0 = no cap. */
  maxPerKey: number;
  /** 0 = no cap. */
  maxPerTenant: number;
}

export interface StreamRefusal {
  message: string;
  details: { scope: 'api_key' | 'tenant'; limit: number };
}

export interface StreamLimiter {
  /** Counts a new stream, or says why not (nothing counted then). */
  acquire(tenantId: string, keyId: string): StreamRefusal | undefined;
  release(tenantId: string, keyId: string): void;
  open(): number;
}

/** Creates the per-process counter of open streams per key and per tenant. */
export function streamLimiter(limits: StreamLimits): StreamLimiter {
  const byKey = new Map<string, number>();
  const byTenant = new Map<string, number>();
  let total = 0;
  const bump = (map: Map<string, number>, id: string, by: number) => {
    const n = (map.get(id) ?? 0) + by;
    if (n <= 0) map.delete(id);
    else map.set(id, n);
  };
  return {
    acquire(tenantId, keyId) {
      if (limits.maxPerKey > 0 && (byKey.get(keyId) ?? 0) >= limits.maxPerKey)
        return {
          message: `Too many open event streams for this API key (at most ${limits.maxPerKey}); close one and retry`,
          details: { scope: 'api_key', limit: limits.maxPerKey },
        };
      if (limits.maxPerTenant > 0 && (byTenant.get(tenantId) ?? 0) >= limits.maxPerTenant)
        return {
          message: `Too many open event streams for this tenant (at most ${limits.maxPerTenant}); close one and retry`,
          details: { scope: 'tenant', limit: limits.maxPerTenant },
        };
      bump(byKey, keyId, 1);
      bump(byTenant, tenantId, 1);
      total += 1;
      return undefined;
    },
    release(tenantId, keyId) {
      bump(byKey, keyId, -1);
      bump(byTenant, tenantId, -1);
      total -= 1;
    },
    open: () => total,
  };
}
