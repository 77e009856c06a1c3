import { randomUUID } from 'node:crypto';
import { EVENT_MAX_BYTES } from '@loopline/core';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { sleep, until } from '../../testkit/src/wait.ts';
import { acquireLease, heldLeases, keySpace, publishEvents, readEvents } from '../src/index.ts';

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

describe('batched renewal', () => {
  it('renews every lease of a process with one command per tick, and a lost one aborts only its holder', async () => {
    // A client of its own, so that what it sends can be counted.
    const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const sent: string[] = [];
    const send = client.sendCommand.bind(client);
    client.sendCommand = ((cmd: { name: string }) => {
      sent.push(cmd.name);
      return send(cmd as never);
    }) as typeof client.sendCommand;
    try {
      const leases = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          acquireLease(client, keys.lock(`ses_batch_${i}`), { ttlMs: 300 }),
        ),
      );
      expect(leases.every((l) => l !== null)).toBe(true);
      expect(heldLeases(client)).toBe(40);
      sent.length = 0;
      // Someone else holds lease 7's key now (as if it had expired and been taken).
      await redis.set(keys.lock('ses_batch_7'), 'someone-else', 'PX', 5000);
      await sleep(800); // on purpose: more than two TTLs, so several renewal ticks
      const ticks = sent.filter((c) => c === 'evalsha' || c === 'eval').length;
      // Several ticks of one call each, not 40 calls per tick.
      expect(ticks).toBeGreaterThanOrEqual(2);
      expect(ticks).toBeLessThan(40);
      for (const [i, lease] of leases.entries()) {
        expect(lease!.lost).toBe(i === 7);
        expect(lease!.signal.aborted).toBe(i === 7);
        if (i !== 7) expect(await redis.get(keys.lock(`ses_batch_${i}`))).toBe(lease!.owner);
      }
      expect(heldLeases(client)).toBe(39);
      await Promise.all(leases.map((l) => l!.release()));
      expect(heldLeases(client)).toBe(0);
      expect(await redis.get(keys.lock('ses_batch_7'))).toBe('someone-else');
      expect(await redis.exists(keys.lock('ses_batch_0'))).toBe(0);
    } finally {
      client.disconnect();
    }
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

  it('an event larger than EVENT_MAX_BYTES is kept as event.clipped; Redis never holds its content', async () => {
    const sid = `ses_${randomUUID()}`;
    const base = { sessionId: sid, messageId: 'msg_1', tokens: 0 };
    const big = 'x'.repeat(EVENT_MAX_BYTES);
    // Multi-byte text: under the cap in characters, over it in bytes.
    const wide = 'é'.repeat(EVENT_MAX_BYTES / 2 + 10);
    const fits = 'y'.repeat(EVENT_MAX_BYTES - 500);
    await publishEvents(redis, keys, sid, [
      { type: 'part.updated', part: { ...base, id: 'prt_text', type: 'text', text: big } },
      { type: 'part.delta', messageId: 'msg_1', partId: 'prt_text', field: 'text', delta: wide },
      {
        type: 'part.updated',
        part: {
          ...base,
          id: 'prt_tool',
          type: 'tool',
          callId: 'call_1',
          tool: 'lookup',
          state: {
            status: 'completed',
            input: {},
            output: big,
            title: '',
            metadata: {},
            time: { start: 1, end: 2 },
          },
        },
      },
      { type: 'part.updated', part: { ...base, id: 'prt_fits', type: 'text', text: fits } },
    ]);
    const events = (await readEvents(redis, keys, sid, '0', 10)).map((e) => e.event);
    expect(events.slice(0, 3)).toEqual([
      {
        type: 'event.clipped',
        event: 'part.updated',
        bytes: expect.any(Number),
        messageId: 'msg_1',
        partId: 'prt_text',
        partType: 'text',
      },
      {
        type: 'event.clipped',
        event: 'part.delta',
        bytes: expect.any(Number),
        messageId: 'msg_1',
        partId: 'prt_text',
      },
      {
        type: 'event.clipped',
        event: 'part.updated',
        bytes: expect.any(Number),
        messageId: 'msg_1',
        partId: 'prt_tool',
        partType: 'tool',
        callId: 'call_1',
        status: 'completed',
      },
    ]);
    for (const e of events.slice(0, 3))
      expect((e as { bytes: number }).bytes).toBeGreaterThan(EVENT_MAX_BYTES);
    expect(events[3]).toMatchObject({ type: 'part.updated', part: { id: 'prt_fits', text: fits } });
    expect(await redis.memory('USAGE', keys.events(sid))).toBeLessThan(2 * EVENT_MAX_BYTES);
  });
});
