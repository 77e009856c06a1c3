import type { KeySpace, RedisClient } from '@loopline/queue';

// A circuit breaker per webhook subscription. An attempt at an endpoint that does not answer holds
// a webhook worker slot for the whole timeout (10 s); every tenant's deliveries share those slots,
// so one tenant's dead endpoints (and the events it can set off, each times its 20 subscriptions)
// would hold them for days. After OPEN_AFTER failed attempts in a row, the subscription's attempts
// fail at once without a request, except one probe every PROBE_EVERY_MS; a success closes it. The
// failed attempts are retried with backoff as before and redelivered by hand as before.

/** Failed attempts in a row after which the breaker opens. */
export const OPEN_AFTER = 5;
/** While open, one attempt goes through this often. */
export const PROBE_EVERY_MS = 30_000;
/** A breaker forgets its count after an hour without a failure. */
const FAILURES_TTL_MS = 3_600_000;

export interface BreakerDeps {
  redis: RedisClient;
  keys: KeySpace;
}

/**
 * Whether this attempt may make its request: undefined when it may, else why not (the breaker is
 * open and another attempt probes the endpoint in this period).
 */
export async function breakerRefusal(
  deps: BreakerDeps,
  tenantId: string,
  name: string,
  opts: { openAfter?: number; probeEveryMs?: number } = {},
): Promise<string | undefined> {
  const { openAfter = OPEN_AFTER, probeEveryMs = PROBE_EVERY_MS } = opts;
  const failures = Number((await deps.redis.get(deps.keys.webhookFailures(tenantId, name))) ?? 0);
  if (failures < openAfter) return undefined;
  const probe = await deps.redis.set(deps.keys.webhookProbe(tenantId, name), '1', 'PX', probeEveryMs, 'NX');
  if (probe === 'OK') return undefined;
  return (
    `not sent: the endpoint failed its last ${failures} attempts, so it is tried once every ` +
    `${Math.round(probeEveryMs / 1000)} s until it answers (this delivery is retried)`
  );
}

/** Records an attempt's outcome: a success closes the breaker, a failure counts. */
export async function recordBreaker(
  deps: BreakerDeps,
  tenantId: string,
  name: string,
  ok: boolean,
): Promise<void> {
  const key = deps.keys.webhookFailures(tenantId, name);
  if (ok) {
    await deps.redis.del(key);
    return;
  }
  await deps.redis.multi().incr(key).pexpire(key, FAILURES_TTL_MS).exec();
}
