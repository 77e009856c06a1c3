import { randomUUID } from 'node:crypto';
import type { RedisClient } from './redis.ts';
import { lockScripts } from './scripts.ts';

// SessionLock: one runner per session. A Redis key set with NX PX, renewed while the holder
// works, released with compare-and-delete. Losing it (renewal fails, key taken) aborts the
// holder's AbortSignal so the LLM stream and tools stop. The lock alone is not trusted for
// writes: the holder also bumps the session's fence in PostgreSQL and every write checks it.

export interface Lease {
  readonly key: string;
  readonly owner: string;
  /** Aborted when the lease is lost or released. */
  readonly signal: AbortSignal;
  readonly lost: boolean;
  release(): Promise<boolean>;
}

export interface LockOptions {
  ttlMs: number;
  /** Renew every ttl/3 by default. */
  renewEveryMs?: number;
  onLost?: (key: string) => void;
}

export async function acquireLease(
  redis: RedisClient,
  key: string,
  opts: LockOptions,
): Promise<Lease | null> {
  const owner = randomUUID();
  const ok = await redis.set(key, owner, 'PX', opts.ttlMs, 'NX');
  if (ok !== 'OK') return null;
  const scripts = lockScripts(redis);
  const controller = new AbortController();
  let lost = false;
  let released = false;
  const renewEvery = opts.renewEveryMs ?? Math.max(50, Math.floor(opts.ttlMs / 3));

  const markLost = () => {
    if (lost || released) return;
    lost = true;
    clearInterval(timer);
    controller.abort(new Error('session lock lost'));
    opts.onLost?.(key);
  };
  const timer = setInterval(() => {
    scripts.extendLock(key, owner, opts.ttlMs).then(
      (n) => {
        if (n !== 1) markLost();
      },
      // A Redis hiccup: keep trying until the TTL would have run out; the fence protects writes.
      () => undefined,
    );
  }, renewEvery);
  timer.unref();

  return {
    key,
    owner,
    signal: controller.signal,
    get lost() {
      return lost;
    },
    async release() {
      if (released) return false;
      released = true;
      clearInterval(timer);
      if (!controller.signal.aborted) controller.abort(new Error('session lock released'));
      if (lost) return false;
      try {
        return (await scripts.releaseLock(key, owner)) === 1;
      } catch {
        return false; // it expires on its own
      }
    },
  };
}
