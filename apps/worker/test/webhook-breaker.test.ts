import { randomUUID } from 'node:crypto';
import { keySpace } from '@loopline/queue';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { sleep } from '../../../packages/testkit/src/wait.ts';
import { breakerRefusal, OPEN_AFTER, recordBreaker } from '../src/webhooks/breaker.ts';

// The webhook subscription's circuit breaker on the real Redis: closed until OPEN_AFTER failed
// attempts in a row; open, one attempt per probe period goes through and the others are refused
// without a request; a success closes it; subscriptions and tenants have breakers of their own.

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = keySpace(`test-${randomUUID()}`);
const deps = { redis, keys };
afterAll(() => redis.quit());

describe('webhook breaker', () => {
  it('opens after failures in a row, lets one probe through per period, closes on a success', async () => {
    const opts = { probeEveryMs: 200 };
    for (let i = 0; i < OPEN_AFTER; i++) {
      expect(await breakerRefusal(deps, 'ten_a', 'hook', opts)).toBeUndefined();
      await recordBreaker(deps, 'ten_a', 'hook', false);
    }
    // Open: the first attempt of the period probes, the next ones are refused.
    expect(await breakerRefusal(deps, 'ten_a', 'hook', opts)).toBeUndefined();
    const refused = await breakerRefusal(deps, 'ten_a', 'hook', opts);
    expect(refused).toMatch(/^not sent: the endpoint failed its last 5 attempts/);
    // Others are not concerned.
    expect(await breakerRefusal(deps, 'ten_a', 'other', opts)).toBeUndefined();
    expect(await breakerRefusal(deps, 'ten_b', 'hook', opts)).toBeUndefined();
    // The next period has its probe; its success closes the breaker.
    await sleep(250);
    expect(await breakerRefusal(deps, 'ten_a', 'hook', opts)).toBeUndefined();
    await recordBreaker(deps, 'ten_a', 'hook', true);
    expect(await breakerRefusal(deps, 'ten_a', 'hook', opts)).toBeUndefined();
    expect(await breakerRefusal(deps, 'ten_a', 'hook', opts)).toBeUndefined();
  });

  it('a success between failures starts the count again', async () => {
    for (let i = 0; i < OPEN_AFTER - 1; i++) await recordBreaker(deps, 'ten_c', 'hook', false);
    await recordBreaker(deps, 'ten_c', 'hook', true);
    for (let i = 0; i < OPEN_AFTER - 1; i++) await recordBreaker(deps, 'ten_c', 'hook', false);
    expect(await breakerRefusal(deps, 'ten_c', 'hook')).toBeUndefined();
    expect(await breakerRefusal(deps, 'ten_c', 'hook')).toBeUndefined();
  });
});
