import { randomUUID } from 'node:crypto';
import { isCluster, type RedisClient } from './redis.ts';
import { loadLua, lockScripts } from './scripts.ts';

// SessionLock: one runner per session. A Redis key set with NX PX, renewed while the holder
// works, released with compare-and-delete. Losing it (renewal fails, key taken) aborts the
// holder's AbortSignal so the LLM stream and tools stop. The lock alone is not trusted for
// writes: the holder also bumps the session's fence in PostgreSQL and every write checks it.
//
// Renewal is batched per process: the leases of one Redis client and timing share ONE timer,
// and each tick extends all of them in one Lua call (extendLocks.lua; chunks of 500 keys), so a
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

/** The one renewal timer of the leases of a Redis client with the same TTL and period. */
class LeaseRenewer {
  private readonly held = new Set<Held>();
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private readonly redis: RedisClient;
  private readonly ttlMs: number;
  private readonly everyMs: number;

  constructor(redis: RedisClient, ttlMs: number, everyMs: number) {
    this.redis = redis;
    this.ttlMs = ttlMs;
    this.everyMs = everyMs;
  }

  get size(): number {
    return this.held.size;
  }

  add(h: Held): void {
    this.held.add(h);
    if (!this.timer) {
      this.timer = setInterval(() => void this.tick(), this.everyMs);
      this.timer.unref();
    }
  }

  delete(h: Held): void {
    this.held.delete(h);
    if (this.held.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async tick(): Promise<void> {
    // A tick still waiting on Redis (a hiccup): the next one would only queue behind it.
    if (this.ticking || this.held.size === 0) return;
    this.ticking = true;
    try {
      const batch = [...this.held];
      if (isCluster(this.redis)) {
        const scripts = lockScripts(this.redis);
        await Promise.all(
          batch.map((h) =>
            scripts.extendLock(h.key, h.owner, this.ttlMs).then(
              (n) => this.settle(h, n),
              () => undefined,
            ),
          ),
        );
        return;
      }
      for (let i = 0; i < batch.length; i += CHUNK) {
        const chunk = batch.slice(i, i + CHUNK);
        const answers = await extendLocks(
          this.redis,
          chunk.map((h) => h.key),
          chunk.map((h) => h.owner),
          this.ttlMs,
        );
        chunk.forEach((h, j) => this.settle(h, answers[j] ?? 0));
      }
    } catch {
      // A Redis hiccup: keep trying until the TTL would have run out; the fence protects writes.
    } finally {
      this.ticking = false;
    }
  }

  /** A lease released since the tick began is not ours to judge any more. */
  private settle(h: Held, answer: number): void {
    if (answer !== 1 && this.held.has(h)) h.markLost();
  }
}

const renewers = new WeakMap<RedisClient, Map<string, LeaseRenewer>>();

function renewerFor(redis: RedisClient, ttlMs: number, everyMs: number): LeaseRenewer {
  let byTiming = renewers.get(redis);
  if (!byTiming) {
    byTiming = new Map();
    renewers.set(redis, byTiming);
  }
  const id = `${ttlMs}:${everyMs}`;
  let renewer = byTiming.get(id);
  if (!renewer) {
    renewer = new LeaseRenewer(redis, ttlMs, everyMs);
    byTiming.set(id, renewer);
  }
  return renewer;
}

/** Leases of this client being renewed (tests and metrics). */
export function heldLeases(redis: RedisClient): number {
  let n = 0;
  for (const r of renewers.get(redis)?.values() ?? []) n += r.size;
  return n;
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
  const renewer = renewerFor(redis, opts.ttlMs, renewEvery);

  const held: Held = {
    key,
    owner,
    markLost() {
      if (lost || released) return;
      lost = true;
      renewer.delete(held);
      controller.abort(new Error('session lock lost'));
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
