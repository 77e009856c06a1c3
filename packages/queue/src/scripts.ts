import { readFileSync } from 'node:fs';
import type { RedisClient } from './redis.ts';

// Loads the Lua files next to this module as ioredis commands (EVALSHA with EVAL fallback).

const dir = new URL('./lua/', import.meta.url);
/** The text of a Lua file of ./lua (e.g. `acquireSlot-2.lua`). */
export const loadLua = (name: string) => readFileSync(new URL(name, dir), 'utf8');
const load = loadLua;

export interface LockScripts {
  extendLock(key: string, owner: string, ttlMs: number): Promise<number>;
  releaseLock(key: string, owner: string): Promise<number>;
}

const defined = new WeakSet<RedisClient>();

/** The lock's Lua commands, defined once per client. */
export function lockScripts(redis: RedisClient): LockScripts {
  if (!defined.has(redis)) {
    redis.defineCommand('llExtendLock', { numberOfKeys: 1, lua: load('extendLock-1.lua') });
    redis.defineCommand('llReleaseLock', { numberOfKeys: 1, lua: load('releaseLock-1.lua') });
    defined.add(redis);
  }
  const r = redis as unknown as Record<string, (...args: unknown[]) => Promise<number>>;
  return {
    extendLock: (key, owner, ttlMs) => r.llExtendLock!(key, owner, ttlMs),
    releaseLock: (key, owner) => r.llReleaseLock!(key, owner),
  };
}
