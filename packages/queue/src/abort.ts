import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';

// Session control over Redis: the abort broadcast (pub/sub; every worker process listens and
// cancels the step job it runs for the session) and the ids of the control jobs. The broadcast
// is only the fast path: the abort is recorded in PostgreSQL first, so a worker that misses it
// (not subscribed yet, Redis blip, job not running) still ends the turn at its next step.

/** Publishes an abort of these sessions; returns how many worker processes heard it. */
export async function publishAbort(
  redis: RedisClient,
  keys: KeySpace,
  sessionIds: readonly string[],
): Promise<number> {
  if (sessionIds.length === 0) return 0;
  return redis.publish(keys.abortChannel(), JSON.stringify({ sessionIds }));
}

export interface AbortSubscription {
  close(): Promise<void>;
}

/**
 * Subscribes `connection` (a dedicated one: a subscribed connection can do nothing else) to the
 * abort channel; `onAbort` gets the session ids of each broadcast. Resolves once subscribed.
 */
export async function subscribeAborts(
  connection: RedisClient,
  keys: KeySpace,
  onAbort: (sessionIds: string[]) => void,
): Promise<AbortSubscription> {
  const channel = keys.abortChannel();
  connection.on('message', (ch: string, message: string) => {
    if (ch !== channel) return;
    try {
      const parsed = JSON.parse(message) as { sessionIds?: unknown };
      if (Array.isArray(parsed.sessionIds))
        onAbort(parsed.sessionIds.filter((s): s is string => typeof s === 'string'));
    } catch {
      // not ours
    }
  });
  await connection.subscribe(channel);
  return {
    async close() {
      try {
        await connection.unsubscribe(channel);
      } catch {
        // closing anyway
      }
      connection.disconnect();
    },
  };
}
