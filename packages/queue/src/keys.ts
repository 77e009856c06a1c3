// Every Redis key and queue prefix of Loopline comes from here.
// Session keys carry the session id as a hash tag ({ses_…}) so a session's keys live on one
// Redis Cluster slot; BullMQ queues use a hash-tagged prefix for the same reason.

export interface KeySpace {
  /** Prefix for BullMQ queues, e.g. `{loopline}`. */
  readonly queuePrefix: string;
  lock(sessionId: string): string;
  events(sessionId: string): string;
  /** The bytes the session's event stream holds, as its publish script counts them. */
  eventsBytes(sessionId: string): string;
  /** The id of the session's newest compaction job (so a compaction is not queued twice). */
  compactJob(sessionId: string): string;
  /** Pub/sub channel that says the session's event stream grew (the gateways' event hubs listen). */
  eventsChannel(sessionId: string): string;
  rateLimit(keyId: string): string;
  /** Pub/sub channel of session aborts: every worker process subscribes (session control). */
  abortChannel(): string;
  /** Sorted set of the tenant's running sessions (member: session id, score: lease expiry ms). */
  tenantSlots(tenantId: string): string;
  /** Sorted set of step jobs waiting for a tenant slot (score: priority, then arrival). */
  tenantSlotWaiters(tenantId: string): string;
  /** Counter of the tenant's model tokens in token window number `window`. */
  tenantTokens(tenantId: string, window: number): string;
  /** Consecutive failed attempts of a webhook subscription (its circuit breaker). */
  webhookFailures(tenantId: string, name: string): string;
  /** Held while an open breaker lets one attempt through to probe the endpoint. */
  webhookProbe(tenantId: string, name: string): string;
}

/** The Redis key names of a namespace, each with its hash tag. */
export function keySpace(namespace = 'loopline'): KeySpace {
  return {
    queuePrefix: `{${namespace}}`,
    lock: (sessionId) => `${namespace}:{${sessionId}}:lock`,
    events: (sessionId) => `${namespace}:{${sessionId}}:events`,
    eventsBytes: (sessionId) => `${namespace}:{${sessionId}}:events:bytes`,
    compactJob: (sessionId) => `${namespace}:{${sessionId}}:compact-job`,
    eventsChannel: (sessionId) => `${namespace}:{${sessionId}}:events:new`,
    rateLimit: (keyId) => `${namespace}:rl:${keyId}`,
    abortChannel: () => `${namespace}:abort`,
    // Tenant keys share a {tenant:…} hash tag: the semaphore scripts touch two of them at once.
    tenantSlots: (tenantId) => `${namespace}:{tenant:${tenantId}}:slots`,
    tenantSlotWaiters: (tenantId) => `${namespace}:{tenant:${tenantId}}:slot-waiters`,
    tenantTokens: (tenantId, window) => `${namespace}:{tenant:${tenantId}}:tokens:${window}`,
    webhookFailures: (tenantId, name) => `${namespace}:{tenant:${tenantId}}:webhook:${name}:failures`,
    webhookProbe: (tenantId, name) => `${namespace}:{tenant:${tenantId}}:webhook:${name}:probe`,
  };
}
