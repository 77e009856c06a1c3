import { randomUUID } from 'node:crypto';
import type { SessionEvent } from '@loopline/core';
import { keySpace, readEvents } from '@loopline/queue';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { sleep } from '../../../packages/testkit/src/wait.ts';
import type { WriterDeps } from '../src/session-writer.ts';
import { SessionWriter } from '../src/session-writer.ts';
import { FLUSH_GROWTH_FROM, flushDue, StreamRecorder } from '../src/step/stream-recorder.ts';

// The step's stream recorder and its event publishes, on the real Redis: with a linger, a stream
// that ends before it publishes nothing of its own (its deltas go out with the step's next write:
// one publish per step); a longer one publishes as it streams; every event once, in order.

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = keySpace(`test-${randomUUID()}`);
afterAll(() => redis.quit());

function recorder(linger: number) {
  const sessionId = `ses_${randomUUID()}`;
  const deps = { redis, keys, logger: pino({ level: 'silent' }) } as unknown as WriterDeps;
  const writer = new SessionWriter(deps, { tenantId: 'ten_x', sessionId, fence: 1 });
  const publish = vi.spyOn(writer, 'publish');
  const rec = new StreamRecorder(writer, 'msg_1', { count: () => 0 } as never, { defer: true, linger });
  rec.hold([{ type: 'session.status', status: 'running' }]);
  const published = async () =>
    (await readEvents(redis, keys, sessionId, '0', undefined)).map((e) => e.event);
  return { writer, rec, publish, published };
}

const deltas = (events: SessionEvent[]) => events.flatMap((e) => (e.type === 'part.delta' ? [e.delta] : []));

describe('stream recorder', () => {
  it('a stream shorter than the linger publishes nothing: its events go with the next write', async () => {
    const { rec, publish, writer, published } = recorder(1_000);
    await rec.start('t', 'text');
    await rec.delta('t', 'one ');
    await rec.delta('t', 'two');
    await rec.endAll();
    expect(publish).not.toHaveBeenCalled();
    const held = rec.takeHeld();
    // The start's held event, the part's first update, then the deltas, in order.
    expect(held.map((e) => e.type)).toEqual(['session.status', 'part.updated', 'part.delta', 'part.delta']);
    expect(deltas(held)).toEqual(['one ', 'two']);
    expect(rec.takeHeld()).toEqual([]);
    await writer.publish(held); // as the step's finish does after its commit
    expect(await published()).toEqual(held);
  });

  it('a longer stream publishes after the linger, and the rest goes with the next write', async () => {
    const { rec, publish, published } = recorder(20);
    await rec.start('t', 'text');
    await rec.delta('t', 'a');
    await rec.delta('t', 'b');
    await sleep(60);
    expect(publish).toHaveBeenCalledTimes(1);
    await rec.delta('t', 'c');
    await rec.endAll();
    const rest = rec.takeHeld();
    expect(deltas(rest)).toEqual(['c']);
    expect(deltas(await published())).toEqual(['a', 'b']);
  });

  it('drain cuts the linger short and publishes everything so far', async () => {
    const { rec, publish, published } = recorder(10_000);
    await rec.start('t', 'text');
    await rec.delta('t', 'x');
    await rec.drain();
    expect(publish).toHaveBeenCalledTimes(1);
    expect(deltas(await published())).toEqual(['x']);
    expect(rec.takeHeld()).toEqual([]);
  });

  it('without a linger every delta is published at once', async () => {
    const { rec, publish } = recorder(0);
    await rec.start('t', 'text');
    await rec.delta('t', 'x');
    expect(publish).toHaveBeenCalledTimes(1);
    await rec.endAll();
    expect(rec.takeHeld()).toEqual([]);
  });
});

describe('stream recorder flushes', () => {
  it('flushDue: every second while the reply is short, then only once it grew by a quarter', () => {
    expect(flushDue(999, 10, 0)).toBe(false);
    expect(flushDue(1_000, 10, 0)).toBe(true);
    expect(flushDue(1_000, FLUSH_GROWTH_FROM, FLUSH_GROWTH_FROM - 1)).toBe(true);
    expect(flushDue(60_000, 100_000 + 24_999, 100_000)).toBe(false);
    expect(flushDue(1_000, 125_000, 100_000)).toBe(true);
  });

  it('a long reply dripped slowly is written about five times its length, not the square of it', async () => {
    const { rec, writer } = recorder(0);
    // Each flush rewrites the reply whole: count what the flushes would write.
    let now = Date.now(); // the recorder's clock started at its construction
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => now);
    let written = 0;
    let streamed = 0;
    const write = vi.spyOn(writer, 'write').mockImplementation(async () => {
      written += streamed;
    });
    vi.spyOn(writer, 'publish').mockResolvedValue(undefined);
    try {
      await rec.start('t', 'text');
      // 2 MB, 1,000 characters a second (a delta every second).
      for (let i = 0; i < 2_000; i++) {
        now += 1_000;
        streamed += 1_000;
        await rec.delta('t', 'x'.repeat(1_000));
      }
      expect(write.mock.calls.length).toBeGreaterThan(10);
      expect(written).toBeLessThan(5 * streamed);
    } finally {
      clock.mockRestore();
    }
  });
});
