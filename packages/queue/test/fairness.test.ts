import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { sleep } from '../../testkit/src/wait.ts';
import {
  acquireSlot,
  extendSlot,
  keySpace,
  releaseSlot,
  renewSlot,
  reserveTokens,
  settleTokens,
  slotHolders,
  tokensUsed,
} from '../src/index.ts';

// The tenant semaphore (acquireSlot-2 / extendSlot-1 / releaseSlot-2) and the token budget window
// (reserveTokens-1) on the real Redis.

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = keySpace(`test-${randomUUID()}`);
afterAll(() => redis.quit());

const slot = (tenantId: string, sessionId: string, limit: number, ttlMs = 5_000, priority = 1) =>
  acquireSlot(redis, keys, { tenantId, sessionId, limit, ttlMs, jobId: `job-${sessionId}`, priority });

describe('tenant semaphore', () => {
  it('admits up to the limit, counts a holder once, and hands a released slot on', async () => {
    const t = 'ten_a';
    expect(await slot(t, 's1', 2)).toEqual({ acquired: true, running: 1 });
    expect(await slot(t, 's1', 2)).toEqual({ acquired: true, running: 1 }); // refresh, not a second slot
    expect(await slot(t, 's2', 2)).toEqual({ acquired: true, running: 2 });
    expect(await slot(t, 's3', 2)).toEqual({ acquired: false, running: 2 });
    expect((await slotHolders(redis, keys, t)).sort()).toEqual(['s1', 's2']);
    // Tenants are independent.
    expect((await slot('ten_b', 's9', 1)).acquired).toBe(true);
    const released = await releaseSlot(redis, keys, t, 's1', 1);
    expect(released).toEqual({ released: true, waiters: ['job-s3'] });
    expect(await slot(t, 's3', 2)).toEqual({ acquired: true, running: 2 });
  });

  it('wakes interactive waiters before batch ones, then the oldest', async () => {
    const t = 'ten_c';
    await slot(t, 'holder', 1);
    await slot(t, 'batch1', 1, 5_000, 5);
    await slot(t, 'inter1', 1, 5_000, 1);
    await slot(t, 'batch2', 1, 5_000, 5);
    await slot(t, 'inter2', 1, 5_000, 1);
    const { waiters } = await releaseSlot(redis, keys, t, 'holder', 4);
    expect(waiters).toEqual(['job-inter1', 'job-inter2', 'job-batch1', 'job-batch2']);
  });

  it('lets a slot of a dead holder expire, and renews a live one', async () => {
    const t = 'ten_d';
    expect((await slot(t, 'dead', 1, 200)).acquired).toBe(true);
    expect((await slot(t, 'live', 1, 200)).acquired).toBe(false);
    await sleep(300); // on purpose: the dead holder's 200 ms slot TTL runs out
    expect((await slot(t, 'live', 1, 200)).acquired).toBe(true);
    expect(await extendSlot(redis, keys, t, 'dead', 200)).toBe(false);
    const renewal = renewSlot(redis, keys, t, 'live', 200);
    await sleep(500); // on purpose: more than two TTLs pass, and the renewed slot is still held
    expect((await slot(t, 'other', 1, 200)).acquired).toBe(false);
    renewal.stop();
    await sleep(300); // on purpose: with the renewal stopped, the TTL runs out
    expect((await slot(t, 'other', 1, 200)).acquired).toBe(true);
  });
});

describe('token budget', () => {
  it('reserves what fits in the window, always admits into an empty one, settles to the usage', async () => {
    const base = { tenantId: 'ten_t', limit: 100, windowMs: 60_000 };
    const now = 1_800_000_000_000 - 30_000; // mid-window
    const big = await reserveTokens(redis, keys, { ...base, tokens: 150, now });
    expect(big.ok).toBe(true); // larger than the whole budget, but alone in its window
    const refused = await reserveTokens(redis, keys, { ...base, tokens: 1, now });
    expect(refused).toEqual({ ok: false, used: 150, resumesAt: 1_800_000_000_000 });
    if (!big.ok) throw new Error('unreachable');
    await settleTokens(redis, keys, big.reservation, 40, 60_000); // the call used 40
    expect(await tokensUsed(redis, keys, 'ten_t', 60_000, now)).toBe(40);
    expect((await reserveTokens(redis, keys, { ...base, tokens: 60, now })).ok).toBe(true);
    expect((await reserveTokens(redis, keys, { ...base, tokens: 1, now })).ok).toBe(false);
    // The next window starts empty.
    expect((await reserveTokens(redis, keys, { ...base, tokens: 100, now: now + 60_000 })).ok).toBe(true);
  });
});
