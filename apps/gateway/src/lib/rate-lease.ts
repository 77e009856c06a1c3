import type { RedisClient } from '@loopline/queue';

// The rate limiter's counter store without a Redis round trip per request: each process takes its
// key's window numbers from the shared Redis counter in blocks (INCRBY) and hands them out from
// memory, so no window admits more than the limit; unused numbers of a block are lost to the other
// processes (at most 0.1 % of the limit each). Exact (a block of 1) up to 1,000 requests per window.
// README "Tenant limits" has the rule and its bounds.

/** Limits up to this many requests per window are counted exactly (one Redis call per request). */
export const LEASE_EXACT_UP_TO = 1_000;
/** Above it, a process takes limit / LEASE_DIVISOR numbers per call. */
export const LEASE_DIVISOR = 1_000;

/** Numbers taken per Redis call for a limit of `max` requests per window. */
export function leaseBlock(max: number): number {
  return max <= LEASE_EXACT_UP_TO ? 1 : Math.floor(max / LEASE_DIVISOR);
}

// INCRBY the window's counter by the block; the first block of a window starts its expiry.
const LEASE_LUA = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {n, ttl}`;

type Lease = (key: string, block: number, windowMs: number) => Promise<[number, number]>;

const defined = new WeakSet<RedisClient>();

function leaseCommand(redis: RedisClient): Lease {
  if (!defined.has(redis)) {
    redis.defineCommand('llRateLease', { numberOfKeys: 1, lua: LEASE_LUA });
    defined.add(redis);
  }
  return (redis as unknown as { llRateLease: Lease }).llRateLease.bind(redis);
}

interface Block {
  /** The window's count before this block. */
  base: number;
  size: number;
  used: number;
  /** performance.now() at which the window ends (as Redis reported its TTL). */
  endsAt: number;
}

export interface RateResult {
  current: number;
  ttl: number;
}
type Callback = (err: Error | null, result?: RateResult) => void;

interface Waiting {
  cb: Callback;
  windowMs: number;
  max: number;
}

/** Keys whose block ran out are forgotten once the map holds this many. */
const SWEEP_AT = 10_000;

/** A counter store handing out each key's window numbers in blocks taken from Redis. */
export class LeasedCounter {
  readonly #lease: Lease;
  readonly #prefix: string;
  readonly #blocks = new Map<string, Block>();
  /** Requests waiting for the key's block in flight (one Redis call per key at a time). */
  readonly #waiting = new Map<string, Waiting[]>();

  constructor(redis: RedisClient, prefix: string) {
    this.#lease = leaseCommand(redis);
    this.#prefix = prefix;
  }

  /** This request's number in the key's window and the window's rest (ms), through `cb`. */
  incr(key: string, cb: Callback, windowMs: number, max: number): void {
    if (this.#take(key, cb)) return;
    const waiting = this.#waiting.get(key);
    if (waiting) {
      waiting.push({ cb, windowMs, max });
      return;
    }
    this.#waiting.set(key, [{ cb, windowMs, max }]);
    this.#refill(key, windowMs, max);
  }

  /** Hands out the next number of a live block; false when there is none. */
  #take(key: string, cb: Callback): boolean {
    const block = this.#blocks.get(key);
    if (!block) return false;
    const ttl = block.endsAt - performance.now();
    if (block.used >= block.size || ttl <= 0) {
      this.#blocks.delete(key);
      return false;
    }
    block.used++;
    cb(null, { current: block.base + block.used, ttl: Math.ceil(ttl) });
    return true;
  }

  #refill(key: string, windowMs: number, max: number): void {
    const size = leaseBlock(max);
    this.#lease(this.#prefix + key, size, windowMs).then(
      ([count, ttl]) => {
        if (this.#blocks.size >= SWEEP_AT) this.#sweep();
        this.#blocks.set(key, { base: count - size, size, used: 0, endsAt: performance.now() + ttl });
        this.#serve(key);
      },
      (err: unknown) => {
        const waiting = this.#waiting.get(key) ?? [];
        this.#waiting.delete(key);
        const error = err instanceof Error ? err : new Error(String(err));
        for (const w of waiting) w.cb(error);
      },
    );
  }

  /** Serves the waiting requests from the new block; the rest wait for the next one. */
  #serve(key: string): void {
    const waiting = this.#waiting.get(key)!;
    let i = 0;
    while (i < waiting.length && this.#take(key, waiting[i]!.cb)) i++;
    if (i === waiting.length) {
      this.#waiting.delete(key);
      return;
    }
    const rest = waiting.slice(i);
    this.#waiting.set(key, rest);
    this.#refill(key, rest[0]!.windowMs, rest[0]!.max);
  }

  #sweep(): void {
    const now = performance.now();
    for (const [key, block] of this.#blocks)
      if (block.used >= block.size || block.endsAt <= now) this.#blocks.delete(key);
  }
}
