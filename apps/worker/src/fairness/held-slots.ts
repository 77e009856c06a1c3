import type { RedisClient } from '@loopline/queue';

// Which tenant slots this process knows it still holds, so the steps of one runner chain do not
// take their session's slot again at every step (one Lua call per step on the tenant's sorted
// set). The next step may skip the call only when all of these hold:
// - this process took the slot (in Redis, at time `at`) for this tenant and session;
// - the step's fence is exactly one past the fence of the step that last used the slot here: every
//   runner bumps the fence by one (acquireFence), so no other runner ran the session in between,
//   and only a runner of the session releases its slot (fairness/loop-stopped.ts, admission);
// - less than half the slot's TTL has passed since `at`: the slot took an expiry of at + TTL then
//   (renewals while the steps ran only moved it later), so it has not expired.
// Every release through this process forgets the session first. What is left is a release by a
// runner superseded after its commit, or Redis losing its data: the chain then runs without a slot
// until the window ends (at most half the TTL) and takes it again; the cap is a fairness limit and
// such a session was running already.

interface Held {
  tenantId: string;
  fence: number;
  at: number;
}

/** At most this many sessions remembered per process; the oldest is forgotten first. */
const MAX_SESSIONS = 50_000;

export class HeldSlots {
  private readonly bySession = new Map<string, Held>();
  private readonly maxSessions: number;

  constructor(maxSessions = MAX_SESSIONS) {
    this.maxSessions = maxSessions;
  }

  /** Whether the step at `fence` may run on the slot an earlier step of its chain took here. */
  holds(tenantId: string, sessionId: string, fence: number, now: number, ttlMs: number): boolean {
    const held = this.bySession.get(sessionId);
    return (
      held !== undefined &&
      held.tenantId === tenantId &&
      held.fence + 1 === fence &&
      now - held.at < ttlMs / 2
    );
  }

  /** The slot was taken (or refreshed) in Redis at `at` by the step at `fence`. */
  took(tenantId: string, sessionId: string, fence: number, at: number): void {
    this.remember(sessionId, { tenantId, fence, at });
  }

  /** The step at `fence` runs on the slot taken earlier (holds() said so): the chain goes on. */
  carried(sessionId: string, fence: number): void {
    const held = this.bySession.get(sessionId);
    if (held) this.remember(sessionId, { ...held, fence });
  }

  /** The slot is released (or about to be): the next step takes it again. */
  forget(sessionId: string): void {
    this.bySession.delete(sessionId);
  }

  get size(): number {
    return this.bySession.size;
  }

  private remember(sessionId: string, held: Held): void {
    // Re-inserted, so the map's order is least recently used first.
    this.bySession.delete(sessionId);
    this.bySession.set(sessionId, held);
    if (this.bySession.size > this.maxSessions) {
      const oldest = this.bySession.keys().next().value;
      if (oldest !== undefined) this.bySession.delete(oldest);
    }
  }
}

const perClient = new WeakMap<RedisClient, HeldSlots>();

/** The process' memo for the slots taken through this Redis client. */
export function heldSlotsOf(redis: RedisClient): HeldSlots {
  let held = perClient.get(redis);
  if (!held) {
    held = new HeldSlots();
    perClient.set(redis, held);
  }
  return held;
}
