import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';
import { loadLua } from './scripts.ts';

// The tenant token budget: a counter per tenant per window (a minute by default, windows aligned
// on multiples of the window length). Before a model call the estimate of its prompt is reserved
// (reserveTokens-1.lua: only when it fits what is left, or the window is empty); after the call
// the reservation is corrected to what the provider reported. A call that does not fit waits for
// the next window.

interface BudgetCommands {
  llReserveTokens(...args: (string | number)[]): Promise<[number, number]>;
}

const defined = new WeakSet<RedisClient>();

function commands(redis: RedisClient): BudgetCommands {
  if (!defined.has(redis)) {
    redis.defineCommand('llReserveTokens', { numberOfKeys: 1, lua: loadLua('reserveTokens-1.lua') });
    defined.add(redis);
  }
  return redis as unknown as BudgetCommands;
}

export interface TokenReservation {
  tenantId: string;
  /** The window the tokens were counted in (its number: floor(now / windowMs)). */
  window: number;
  tokens: number;
}

export type ReserveAnswer =
  | { ok: true; reservation: TokenReservation; used: number }
  | { ok: false; used: number /** When the next window starts (epoch ms). */; resumesAt: number };

/** Reserves tokens in the tenant's current window, or says when the next window starts. */
export async function reserveTokens(
  redis: RedisClient,
  keys: KeySpace,
  req: { tenantId: string; tokens: number; limit: number; windowMs: number; now: number },
): Promise<ReserveAnswer> {
  const window = Math.floor(req.now / req.windowMs);
  const tokens = Math.max(0, Math.ceil(req.tokens));
  const [ok, used] = await commands(redis).llReserveTokens(
    keys.tenantTokens(req.tenantId, window),
    tokens,
    req.limit,
    req.windowMs * 2,
  );
  if (ok === 1) return { ok: true, reservation: { tenantId: req.tenantId, window, tokens }, used };
  return { ok: false, used, resumesAt: (window + 1) * req.windowMs };
}

/** Replaces a reservation by the tokens actually used (0 refunds it). */
export async function settleTokens(
  redis: RedisClient,
  keys: KeySpace,
  reservation: TokenReservation,
  actual: number,
  windowMs: number,
): Promise<void> {
  const delta = Math.ceil(actual) - reservation.tokens;
  if (delta === 0) return;
  const key = keys.tenantTokens(reservation.tenantId, reservation.window);
  await redis
    .multi()
    .incrby(key, delta)
    .pexpire(key, windowMs * 2)
    .exec();
}

/** Tokens counted in the tenant's current window (for tests and status). */
export async function tokensUsed(
  redis: RedisClient,
  keys: KeySpace,
  tenantId: string,
  windowMs: number,
  now: number,
): Promise<number> {
  return Number((await redis.get(keys.tenantTokens(tenantId, Math.floor(now / windowMs)))) ?? 0);
}
