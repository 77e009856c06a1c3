import { randomUUID } from 'node:crypto';
import { redisUrl } from '@loopline/testkit';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { LEASE_EXACT_UP_TO, LeasedCounter, leaseBlock, type RateResult } from '../src/lib/rate-lease.ts';

// The rate limiter's leased counter on real Redis: small limits counted exactly (a Redis call per
// request), large ones in blocks; several processes (counters) on one key never admit more than
// the limit in a window, and a new window starts the count again.

const redis = new Redis(redisUrl(), { maxRetriesPerRequest: 3 });
const prefix = `test-${randomUUID()}:rl:`;
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

const incr = (c: LeasedCounter, key: string, windowMs: number, max: number) =>
  new Promise<RateResult>((resolve, reject) =>
    c.incr(key, (err, res) => (err ? reject(err) : resolve(res!)), windowMs, max),
  );

/** EVALSHA/EVAL calls sent on the connection while `f` runs. */
async function redisCalls(f: () => Promise<unknown>): Promise<number> {
  const monitor = await redis.monitor();
  let calls = 0;
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (/^eval/i.test(args[0] ?? '') && args.some((a) => a.startsWith(prefix))) calls++;
  });
  await f();
  // MONITOR lines can lag behind the replies on a busy machine: wait until they stop coming.
  for (let seen = -1, waited = 0; seen !== calls && waited < 3_000; waited += 200) {
    seen = calls;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  monitor.disconnect();
  return calls;
}

describe('LeasedCounter', () => {
  it('takes one number per call up to LEASE_EXACT_UP_TO, then limit / 1,000', () => {
    expect(leaseBlock(3)).toBe(1);
    expect(leaseBlock(LEASE_EXACT_UP_TO)).toBe(1);
    expect(leaseBlock(60_000)).toBe(60);
    expect(leaseBlock(10_000_000)).toBe(10_000);
  });

  it('counts a small limit exactly, one Redis call per request, across processes', async () => {
    const a = new LeasedCounter(redis, prefix);
    const b = new LeasedCounter(redis, prefix);
    const seen: number[] = [];
    const calls = await redisCalls(async () => {
      for (let i = 0; i < 4; i++) seen.push((await incr(i % 2 ? b : a, 'small', 60_000, 3)).current);
    });
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(calls).toBe(4);
  });

  it('hands out a large limit in blocks, concurrent requests waiting for one call', async () => {
    const a = new LeasedCounter(redis, prefix);
    let results: RateResult[] = [];
    const calls = await redisCalls(async () => {
      results = await Promise.all(Array.from({ length: 150 }, () => incr(a, 'large', 60_000, 100_000)));
    });
    // Blocks of 100: two calls for 150 requests, numbers 1..150 in order, TTL within the window.
    expect(calls).toBe(2);
    expect(results.map((r) => r.current)).toEqual(Array.from({ length: 150 }, (_, i) => i + 1));
    for (const r of results) expect(r.ttl).toBeGreaterThan(0);
    for (const r of results) expect(r.ttl).toBeLessThanOrEqual(60_000);
    expect(Number(await redis.get(`${prefix}large`))).toBe(200);
  });

  it('never admits more than the limit across processes; numbers unused by one are lost to the others', async () => {
    const max = 2_000; // blocks of 2
    const counters = [0, 1, 2].map(() => new LeasedCounter(redis, prefix));
    const admitted = await Promise.all(
      counters.map(async (c, i) => {
        let ok = 0;
        for (let n = 0; n < 1_000 + i; n++) if ((await incr(c, 'shared', 60_000, max)).current <= max) ok++;
        return ok;
      }),
    );
    const total = admitted.reduce((x, y) => x + y, 0);
    expect(total).toBeLessThanOrEqual(max);
    // Each of the three holds at most one block of 2, partly unused, when the window fills.
    expect(total).toBeGreaterThanOrEqual(max - 3 * (leaseBlock(max) - 1));
  });

  it('follows a lower limit at once and starts again in a new window', async () => {
    const a = new LeasedCounter(redis, prefix);
    expect((await incr(a, 'window', 300, 5_000)).current).toBe(1);
    // The same block (of 5), checked against a limit now 2: numbers go on, the caller compares.
    expect((await incr(a, 'window', 300, 2)).current).toBe(2);
    expect((await incr(a, 'window', 300, 2)).current).toBe(3);
    await new Promise((resolve) => setTimeout(resolve, 350));
    const next = await incr(a, 'window', 300, 2);
    expect(next.current).toBe(1);
    expect(next.ttl).toBeLessThanOrEqual(300);
  });

  it('reports a Redis failure to every waiting request (the plugin then skips the limit)', async () => {
    const broken = new Redis(redisUrl(), { maxRetriesPerRequest: 0, lazyConnect: true });
    broken.disconnect();
    const c = new LeasedCounter(broken, prefix);
    const results = await Promise.allSettled([incr(c, 'down', 60_000, 10), incr(c, 'down', 60_000, 10)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});
