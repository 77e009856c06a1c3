import { randomUUID } from 'node:crypto';
import type { SessionEvent } from '@loopline/core';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  EVENT_STREAM_MAX_BYTES,
  EVENT_STREAM_MAX_LEN,
  keySpace,
  publishEvents,
  readEvents,
} from '../src/index.ts';

// A session's event stream is bounded in bytes and in entries (packages/queue/src/lua/
// publishEvents-2.lua): a tenant's messages decide what the events hold, and without a byte
// budget one session could keep 10,000 events of 128 KiB (1.25 GB) in the Redis every tenant shares.

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = keySpace(`test-${randomUUID()}`);
afterAll(() => redis.quit());

const message = (i: number, text: string): SessionEvent =>
  ({
    type: 'part.updated',
    part: { id: `prt_${i}`, sessionId: 'ses', messageId: `msg_${i}`, tokens: 0, type: 'text', text },
  }) as SessionEvent;

/** The JSON bytes of the entries the stream holds. */
async function streamBytes(key: string): Promise<{ bytes: number; entries: number; first: string }> {
  const entries = (await redis.xrange(key, '-', '+')) as [string, string[]][];
  return {
    bytes: entries.reduce((n, [, fields]) => n + Buffer.byteLength(fields[1]!), 0),
    entries: entries.length,
    first: entries[0]?.[0] ?? '',
  };
}

describe('event stream budgets', () => {
  it('keeps at most EVENT_STREAM_MAX_BYTES: the oldest events go, the newest always stay', async () => {
    const sid = `ses_${randomUUID()}`;
    const big = 'x'.repeat(120 * 1024); // under the 128 KiB clip: each event is kept whole
    for (let i = 0; i < 100; i++) await publishEvents(redis, keys, sid, [message(i, big)]); // ~12 MB
    const held = await streamBytes(keys.events(sid));
    expect(held.bytes).toBeLessThanOrEqual(EVENT_STREAM_MAX_BYTES);
    expect(held.bytes).toBeGreaterThan(EVENT_STREAM_MAX_BYTES / 2);
    expect(await redis.memory('USAGE', keys.events(sid))).toBeLessThan(EVENT_STREAM_MAX_BYTES * 1.25);
    // The newest event is there, the oldest is not: a reader from the start gets the newest ones.
    const read = await readEvents(redis, keys, sid, '0', undefined, 1_000);
    expect(read.at(-1)?.event).toMatchObject({ part: { id: 'prt_99' } });
    expect(read[0]?.event).not.toMatchObject({ part: { id: 'prt_0' } });
    expect(read).toHaveLength(held.entries);
    // The count the script keeps is the stream's (its JSON plus 32 bytes per entry).
    expect(Number(await redis.get(keys.eventsBytes(sid)))).toBe(held.bytes + 32 * held.entries);
    // Both keys expire with the stream.
    expect(await redis.ttl(keys.events(sid))).toBeGreaterThan(0);
    expect(await redis.ttl(keys.eventsBytes(sid))).toBeGreaterThan(0);
  });

  it('one publish past the byte budget keeps its newest events', async () => {
    const sid = `ses_${randomUUID()}`;
    const events = Array.from({ length: 80 }, (_, i) => message(i, 'y'.repeat(120 * 1024)));
    await publishEvents(redis, keys, sid, events); // one publish of ~9.6 MB
    const held = await streamBytes(keys.events(sid));
    expect(held.bytes).toBeLessThanOrEqual(EVENT_STREAM_MAX_BYTES);
    const read = await readEvents(redis, keys, sid, '0', undefined, 1_000);
    expect(read.at(-1)?.event).toMatchObject({ part: { id: 'prt_79' } });
  });

  it(`keeps at most EVENT_STREAM_MAX_LEN (${EVENT_STREAM_MAX_LEN}) small events`, async () => {
    const sid = `ses_${randomUUID()}`;
    const batch = (from: number) => Array.from({ length: 500 }, (_, i) => message(from + i, 'hi'));
    for (let i = 0; i < EVENT_STREAM_MAX_LEN + 500; i += 500) await publishEvents(redis, keys, sid, batch(i));
    const len = await redis.xlen(keys.events(sid));
    expect(len).toBeLessThanOrEqual(EVENT_STREAM_MAX_LEN);
    expect(len).toBeGreaterThanOrEqual(Math.floor((EVENT_STREAM_MAX_LEN * 3) / 4));
    const held = await streamBytes(keys.events(sid));
    expect(Number(await redis.get(keys.eventsBytes(sid)))).toBe(held.bytes + 32 * held.entries);
  });

  it('a stream under both budgets keeps every event', async () => {
    const sid = `ses_${randomUUID()}`;
    for (let i = 0; i < 50; i++) await publishEvents(redis, keys, sid, [message(i, 'hello')]);
    expect(await redis.xlen(keys.events(sid))).toBe(50);
  });
});
