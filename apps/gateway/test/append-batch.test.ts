import type { SessionStatus } from '@loopline/core';
import { type AppendAndQueueInput, getMessage, loadHistory } from '@loopline/db';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../../packages/testkit/src/fixtures.ts';
import { makeSessions } from '../../../packages/testkit/src/index.ts';
import { APPEND_BATCH_MAX_CHARS, AppendBatcher } from '../src/lib/append-batch.ts';

// The gateway's group commit on real PostgreSQL: messages that would queue for a statement slot
// go in one statement together, first come first written, one per session per batch; a message
// PostgreSQL refuses fails alone.

const RULES = { wakeFrom: ['idle', 'error'] as SessionStatus[], midRunIn: ['running'] as SessionStatus[] };

function text(tenantId: string, sessionId: string, body: string, partId?: string): AppendAndQueueInput {
  return {
    tenantId,
    sessionId,
    parts: [{ type: 'text', text: body, tokens: 1, ...(partId ? { id: partId } : {}) }],
    ...RULES,
  };
}

/** The text of each message of the session's log, in seq order. */
async function texts(db: Parameters<typeof loadHistory>[0], tenantId: string, sessionId: string) {
  const history = await loadHistory(db, tenantId, sessionId);
  return history.map((m) => (m.parts[0]?.type === 'text' ? m.parts[0].text : ''));
}

describe('AppendBatcher', () => {
  test('messages that queue are written together, in the order they came, one per session per batch', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 10);
    const batcher = new AppendBatcher(pg.db, { concurrency: 1, maxBatch: 64 });
    // Three messages per session, all sent at once: only one statement may run at a time.
    const sent = [0, 1, 2].flatMap((k) => ids.map((id) => batcher.append(text(tenantId, id, `${id}-${k}`))));
    const results = await Promise.all(sent);
    expect(results.every((r) => r !== undefined)).toBe(true);
    expect(batcher.stats.messages).toBe(30);
    // The first went alone; the other 29 waited and went in batches of at most one per session.
    expect(batcher.stats.statements).toBeLessThan(30);
    expect(batcher.stats.largest).toBeLessThanOrEqual(10);
    for (const id of ids) expect(await texts(pg.db, tenantId, id)).toEqual([`${id}-0`, `${id}-1`, `${id}-2`]);
  });

  test('a message PostgreSQL refuses fails alone; the rest of its batch is written', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 4);
    const batcher = new AppendBatcher(pg.db, { concurrency: 1, maxBatch: 64 });
    const first = await batcher.append(text(tenantId, ids[0]!, 'first', 'prt_taken'));
    expect(first).toBeDefined();
    // The slot is busy with a, so b, c and d wait and go in one statement, which the taken part
    // id of c makes fail: each is then written on its own.
    const a = batcher.append(text(tenantId, ids[0]!, 'a'));
    const b = batcher.append(text(tenantId, ids[1]!, 'b'));
    const c = batcher.append(text(tenantId, ids[2]!, 'c', 'prt_taken'));
    const d = batcher.append(text(tenantId, ids[3]!, 'd'));
    await expect(c).rejects.toMatchObject({ code: '23505' });
    const [ra, rb, rd] = await Promise.all([a, b, d]);
    expect([ra, rb, rd].map((r) => r?.session.lastSeq)).toEqual([2, 1, 1]);
    expect(await texts(pg.db, tenantId, ids[1]!)).toEqual(['b']);
    expect(await texts(pg.db, tenantId, ids[2]!)).toEqual([]);
    expect(await texts(pg.db, tenantId, ids[3]!)).toEqual(['d']);
    expect(await getMessage(pg.db, tenantId, ids[0]!, first!.message.info.id)).toBeDefined();
  });

  test('a message no statement may write (no parts) fails alone, before any batch', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 2);
    const batcher = new AppendBatcher(pg.db, { concurrency: 1, maxBatch: 64 });
    const busy = batcher.append(text(tenantId, ids[0]!, 'busy'));
    const empty = batcher.append({ ...text(tenantId, ids[1]!, ''), parts: [] });
    const fine = batcher.append(text(tenantId, ids[1]!, 'fine'));
    await expect(empty).rejects.toThrow(/at least one part/);
    expect((await fine)?.session.lastSeq).toBe(1);
    expect((await busy)?.session.lastSeq).toBe(1);
  });

  test("a batch refuses another tenant's session for that message only", async ({ pg }) => {
    const mine = await makeSessions(pg.db, 2);
    const theirs = await makeSessions(pg.db, 1);
    const batcher = new AppendBatcher(pg.db, { concurrency: 1, maxBatch: 64 });
    const [x, y, z] = await Promise.all([
      batcher.append(text(mine.tenantId, mine.ids[0]!, 'x')),
      batcher.append(text(mine.tenantId, theirs.ids[0]!, 'y')),
      batcher.append(text(mine.tenantId, mine.ids[1]!, 'z')),
    ]);
    expect(x?.session.lastSeq).toBe(1);
    expect(y).toBeUndefined();
    expect(z?.session.lastSeq).toBe(1);
    expect(await texts(pg.db, theirs.tenantId, theirs.ids[0]!)).toEqual([]);
  });

  test('a statement carries a bounded amount of text: large messages go in batches of their own', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 5);
    const batcher = new AppendBatcher(pg.db, { concurrency: 1, maxBatch: 64 });
    const large = 'x'.repeat(Math.ceil(APPEND_BATCH_MAX_CHARS * 0.6));
    const sent = [
      batcher.append(text(tenantId, ids[0]!, 'small, alone: the slot was free')),
      ...ids.slice(1).map((id) => batcher.append(text(tenantId, id, large))),
    ];
    expect((await Promise.all(sent)).every((r) => r !== undefined)).toBe(true);
    // Two of 0.6 × the cap do not fit one statement: every large message went alone.
    expect(batcher.stats).toMatchObject({ statements: 5, messages: 5, largest: 1 });
    expect(await texts(pg.db, tenantId, ids[4]!)).toEqual([large]);
  });

  test('a batch holds at most maxBatch messages; the rest wait in order for the next', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 20);
    const batcher = new AppendBatcher(pg.db, { concurrency: 1, maxBatch: 4 });
    const results = await Promise.all(ids.map((id) => batcher.append(text(tenantId, id, `to ${id}`))));
    expect(results.every((r) => r?.session.lastSeq === 1)).toBe(true);
    expect(batcher.stats.largest).toBe(4);
    // The first alone, then 19 in batches of at most 4.
    expect(batcher.stats.statements).toBe(1 + Math.ceil(19 / 4));
  });

  test('options left undefined are the defaults: messages are written, none waits forever', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 3);
    const batcher = new AppendBatcher(pg.db, { concurrency: undefined, maxBatch: undefined });
    const results = await Promise.all(ids.map((id) => batcher.append(text(tenantId, id, 'defaults'))));
    expect(results.map((r) => r?.session.lastSeq)).toEqual([1, 1, 1]);
  });

  test('a batch of one writes every message on its own', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 3);
    const batcher = new AppendBatcher(pg.db, { concurrency: 1, maxBatch: 1 });
    await Promise.all(ids.map((id) => batcher.append(text(tenantId, id, 'alone'))));
    expect(batcher.stats.statements).toBe(0);
    for (const id of ids) expect(await texts(pg.db, tenantId, id)).toEqual(['alone']);
  });
});
