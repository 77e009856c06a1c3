import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { sleep, until } from '../../testkit/src/wait.ts';
import { acquireLease, keySpace, publishEvents, readEvents } from '../src/index.ts';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = keySpace(`test-${randomUUID()}`);
afterAll(() => redis.quit());

describe('session lock', () => {
  it('gives one holder at a time and releases with compare-and-delete', async () => {
    const key = keys.lock('ses_a');
    const a = await acquireLease(redis, key, { ttlMs: 1000 });
    expect(a).not.toBeNull();
    expect(await acquireLease(redis, key, { ttlMs: 1000 })).toBeNull();
    expect(await a!.release()).toBe(true);
    expect(a!.signal.aborted).toBe(true);
    const b = await acquireLease(redis, key, { ttlMs: 1000 });
    expect(b).not.toBeNull();
    await b!.release();
  });

  it('is renewed while held, beyond its ttl', async () => {
    const key = keys.lock('ses_b');
    const a = await acquireLease(redis, key, { ttlMs: 300 });
    await sleep(800); // on purpose: more than two TTLs pass while the lease is held
    expect(await redis.get(key)).toBe(a!.owner);
    expect(a!.lost).toBe(false);
    await a!.release();
  });

  it('aborts the holder when the lock is taken over, and the old owner cannot release the new lock', async () => {
    const key = keys.lock('ses_c');
    const a = await acquireLease(redis, key, { ttlMs: 300, renewEveryMs: 50 });
    await redis.set(key, 'someone-else', 'PX', 5000); // as if a's lease had expired and another took it
    await until('the holder noticed the takeover', () => a!.lost);
    expect(a!.signal.aborted).toBe(true);
    expect(await a!.release()).toBe(false);
    expect(await redis.get(key)).toBe('someone-else');
  });
});

describe('session events', () => {
  it('resumes after a given id without losing or repeating events', async () => {
    const sid = `ses_${randomUUID()}`;
    await publishEvents(redis, keys, sid, [
      { type: 'session.status', status: 'running' },
      { type: 'session.idle' },
      { type: 'session.status', status: 'idle' },
    ]);
    const all = await readEvents(redis, keys, sid, '0', 10);
    expect(all.map((e) => e.event.type)).toEqual(['session.status', 'session.idle', 'session.status']);
    const rest = await readEvents(redis, keys, sid, all[0]!.id, 10);
    expect(rest.map((e) => e.id)).toEqual(all.slice(1).map((e) => e.id));
  });
});
