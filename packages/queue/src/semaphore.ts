import type { KeySpace } from './keys.ts';
import { isCluster, type RedisClient } from './redis.ts';
import { chunks, RenewalTicker, tickerFor } from './renewals.ts';
import { loadLua } from './scripts.ts';

// The tenant semaphore: at most `limit` sessions of a tenant run at once. A slot is a lease held
// by a session (not by a job): taken when a step is about to call the model, renewed while the
// step runs, kept between the steps of one run (its TTL covers the gap), released when the loop
// stops (idle, error, waiting). A worker that dies leaves a slot that expires after its TTL.
// A step refused a slot registers its job as a waiter; a release pops waiters (interactive
// first, then oldest) so the caller can promote their delayed jobs instead of waiting for a poll.

interface SlotCommands {
  llAcquireSlot(...args: (string | number)[]): Promise<[number, number]>;
  llExtendSlot(...args: (string | number)[]): Promise<number>;
  llReleaseSlot(...args: (string | number)[]): Promise<[number, ...string[]]>;
  llExtendSlots(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
}

const defined = new WeakSet<RedisClient>();

function commands(redis: RedisClient): SlotCommands {
  if (!defined.has(redis)) {
    redis.defineCommand('llAcquireSlot', { numberOfKeys: 2, lua: loadLua('acquireSlot-2.lua') });
    redis.defineCommand('llExtendSlot', { numberOfKeys: 1, lua: loadLua('extendSlot-1.lua') });
    redis.defineCommand('llReleaseSlot', { numberOfKeys: 2, lua: loadLua('releaseSlot-2.lua') });
    redis.defineCommand('llExtendSlots', { lua: loadLua('extendSlots.lua') });
    defined.add(redis);
  }
  return redis as unknown as SlotCommands;
}

export interface SlotRequest {
  tenantId: string;
  sessionId: string;
  /** Slots of the tenant. */
  limit: number;
  /** Lease TTL: how long the slot survives without a renewal. */
  ttlMs: number;
  /** The step job asking: registered as a waiter when refused. */
  jobId: string;
  /** Its BullMQ priority (lower first): interactive waiters are woken before batch ones. */
  priority: number;
}

export interface SlotAnswer {
  acquired: boolean;
  /** Sessions of the tenant holding a slot (including this one when acquired). */
  running: number;
}

/** Takes or refreshes the session's slot; refused when all `limit` slots are held by others. */
export async function acquireSlot(redis: RedisClient, keys: KeySpace, req: SlotRequest): Promise<SlotAnswer> {
  const [ok, running] = await commands(redis).llAcquireSlot(
    keys.tenantSlots(req.tenantId),
    keys.tenantSlotWaiters(req.tenantId),
    req.sessionId,
    req.ttlMs,
    req.limit,
    req.jobId,
    req.priority,
  );
  return { acquired: ok === 1, running };
}

/** Renews a held slot; false when it had expired or was released. */
export async function extendSlot(
  redis: RedisClient,
  keys: KeySpace,
  tenantId: string,
  sessionId: string,
  ttlMs: number,
): Promise<boolean> {
  return (await commands(redis).llExtendSlot(keys.tenantSlots(tenantId), sessionId, ttlMs)) === 1;
}

/** Releases the session's slot (a no-op when it holds none) and pops up to `wake` waiters. */
export async function releaseSlot(
  redis: RedisClient,
  keys: KeySpace,
  tenantId: string,
  sessionId: string,
  wake = 1,
): Promise<{ released: boolean; waiters: string[] }> {
  const [released, ...waiters] = await commands(redis).llReleaseSlot(
    keys.tenantSlots(tenantId),
    keys.tenantSlotWaiters(tenantId),
    sessionId,
    wake,
  );
  return { released: released === 1, waiters };
}

/** Sessions holding an unexpired slot of the tenant (for status details and tests). */
export async function slotHolders(redis: RedisClient, keys: KeySpace, tenantId: string): Promise<string[]> {
  const [seconds, micros] = await redis.time();
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  return redis.zrangebyscore(keys.tenantSlots(tenantId), now + 1, '+inf');
}

export interface SlotRenewal {
  /** Stops renewing; the slot itself stays held until released or expired. */
  stop(): void;
}

interface HeldSlot {
  slots: string;
  sessionId: string;
}

const tickers = new WeakMap<RedisClient, Map<string, RenewalTicker<HeldSlot>>>();

/** Slots per extendSlots call. */
const CHUNK = 500;

/**
 * Renews the session's slot every ttl/3 until stopped (a failed renewal is retried next tick).
 * All the slots a process renews with one client and TTL share one timer and one extendSlots
 * call per tick (renewals.ts); on a Cluster one extendSlot per slot, still on the one timer.
 */
export function renewSlot(
  redis: RedisClient,
  keys: KeySpace,
  tenantId: string,
  sessionId: string,
  ttlMs: number,
): SlotRenewal {
  const everyMs = Math.max(50, Math.floor(ttlMs / 3));
  const ticker = tickerFor(tickers, redis, ttlMs, everyMs, () => {
    return new RenewalTicker<HeldSlot>(everyMs, async (batch) => {
      if (isCluster(redis)) {
        await Promise.all(
          batch.map((h) =>
            commands(redis)
              .llExtendSlot(h.slots, h.sessionId, ttlMs)
              .catch(() => 0),
          ),
        );
        return;
      }
      for (const chunk of chunks(batch, CHUNK)) {
        await commands(redis).llExtendSlots(
          chunk.length,
          ...chunk.map((h) => h.slots),
          ttlMs,
          ...chunk.map((h) => h.sessionId),
        );
      }
    });
  });
  const held: HeldSlot = { slots: keys.tenantSlots(tenantId), sessionId };
  ticker.add(held);
  return { stop: () => ticker.delete(held) };
}
