import { randomUUID } from 'node:crypto';
import { isCluster, type RedisClient } from './redis.ts';
import { chunks, RenewalTicker, tickerFor } from './renewals.ts';
import { loadLua, lockScripts } from './scripts.ts';

// SessionLock: one runner per session. A Redis key set with NX PX, renewed while the holder
// works, released with compare-and-delete. Losing it (renewal fails, key taken) aborts the
// holder's AbortSignal so the LLM stream and tools stop. The lock alone is not trusted for
// writes: the holder also bumps the session's fence in PostgreSQL and every write checks it.
//
// Renewal is batched per process (renewals.ts): the leases of one Redis client and timing share
// ONE timer, and each tick extends all of them in one Lua call (extendLocks.lua; chunks of 500 keys), so a
// worker holding 1,000 sessions through their model calls sends one command every ttl/3, not
// 1,000 timers and 1,000 commands. The answer is per lease: a lease the tick finds gone or taken
// is marked lost and only its holder is aborted. On a Redis Cluster the locks of different
// sessions live in different slots, so the tick sends one extendLock per lease instead (still
// one timer, all commands written in the same tick).

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

/** A lease as its renewer sees it. */
interface Held {
  key: string;
  owner: string;
  markLost(): void;
}

/** Keys per extendLocks call: keeps one script run short on a busy Redis. */
const CHUNK = 500;

interface ExtendLocksCommand {
  llExtendLocks(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
}

const extendLocksDefined = new WeakSet<RedisClient>();

function extendLocks(redis: RedisClient, keys: string[], owners: string[], ttlMs: number): Promise<number[]> {
  if (!extendLocksDefined.has(redis)) {
    redis.defineCommand('llExtendLocks', { lua: loadLua('extendLocks.lua') });
    extendLocksDefined.add(redis);
  }
  return (redis as unknown as ExtendLocksCommand).llExtendLocks(keys.length, ...keys, ttlMs, ...owners);
}

const tickers = new WeakMap<RedisClient, Map<string, RenewalTicker<Held>>>();

/** The one renewal timer of the leases of a Redis client with the same TTL and period. */
function tickerOf(redis: RedisClient, ttlMs: number, everyMs: number): RenewalTicker<Held> {
  return tickerFor(tickers, redis, ttlMs, everyMs, () => {
    const ticker: RenewalTicker<Held> = new RenewalTicker(everyMs, async (batch) => {
      // A lease released since the tick began is not ours to judge any more.
      const settle = (h: Held, answer: number) => {
        if (answer !== 1 && ticker.has(h)) h.markLost();
      };
      if (isCluster(redis)) {
        const scripts = lockScripts(redis);
        await Promise.all(
          batch.map((h) =>
            scripts.extendLock(h.key, h.owner, ttlMs).then(
              (n) => settle(h, n),
              () => undefined,
            ),
          ),
        );
        return;
      }
      for (const chunk of chunks(batch, CHUNK)) {
        const answers = await extendLocks(
          redis,
          chunk.map((h) => h.key),
          chunk.map((h) => h.owner),
          ttlMs,
        );
        for (const [j, h] of chunk.entries()) settle(h, answers[j] ?? 0);
      }
    });
    return ticker;
  });
}

/** Leases of this client being renewed (tests and metrics). */
export function heldLeases(redis: RedisClient): number {
  let n = 0;
  for (const t of tickers.get(redis)?.values() ?? []) n += t.size;
  return n;
}

// The lease signal's reasons, made once: an Error built per release captured a stack trace on
// every step (0.6 % of a loaded worker's CPU). Nothing mutates them; they only say why.
const LOCK_LOST = new Error('session lock lost');
const LOCK_RELEASED = new Error('session lock released');

/** Takes the lock and starts renewing it; null when another holder has it. */
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
  const renewer = tickerOf(redis, opts.ttlMs, renewEvery);

  const held: Held = {
    key,
    owner,
    markLost() {
      if (lost || released) return;
      lost = true;
      renewer.delete(held);
      controller.abort(LOCK_LOST);
      opts.onLost?.(key);
    },
  };
  renewer.add(held);

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
      renewer.delete(held);
      if (!controller.signal.aborted) controller.abort(LOCK_RELEASED);
      if (lost) return false;
      try {
        return (await scripts.releaseLock(key, owner)) === 1;
      } catch {
        return false; // it expires on its own
      }
    },
  };
}
