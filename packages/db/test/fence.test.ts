import { randomBytes } from 'node:crypto';
import { LooplineError } from '@loopline/core';
import { sql } from 'kysely';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { lockWaiters, makeSessions, makeSessionWithTenant, until } from '../../testkit/src/index.ts';
import {
  acquireFence,
  acquireFenceWithChanges,
  acquireFenceWithSession,
  acquireFenceWithSnapshot,
  acquireStepFences,
  appendUserMessage,
  appendUserMessageAndQueue,
  createAssistantMessage,
  currentFence,
  type Db,
  type FenceWithChanges,
  type FenceWithSnapshot,
  getSession,
  historyChangesSince,
  loadHistory,
  loadHistorySnapshot,
  NotFoundError,
  StaleFenceError,
  setSessionStatus,
  updateSessionProgress,
  withFence,
} from '../src/index.ts';

// Fencing: the token comes from PostgreSQL; a stale holder's transaction writes nothing.

/** A user message of text parts, one token each, appended outside any fence. */
function appendText(db: Db, tenantId: string, sessionId: string, texts: string[]) {
  return appendUserMessage(db, {
    tenantId,
    sessionId,
    agent: 'build',
    parts: texts.map((text) => ({ type: 'text' as const, text, tokens: 1 })),
  });
}

/** PostgreSQL's stored size of a session's messages and parts (what the whole-log budget counts). */
async function storedLogBytes(db: Db, sessionId: string): Promise<number> {
  const { rows } = await sql<{ bytes: number }>`select
      (select coalesce(sum(pg_column_size(info)), 0) from messages where session_id = ${sessionId})
      + (select coalesce(sum(pg_column_size(data)), 0) from parts where session_id = ${sessionId}) as bytes`.execute(
    db,
  );
  return Number(rows[0]!.bytes);
}

/**
 * Runs `take` while an open fenced write of the old holder holds the session row, then lets that
 * write commit a message: `take` must answer while the row is still held (no fence statement
 * waits for it).
 */
async function whileAWriterHoldsTheRow<T>(
  db: Db,
  ids: { tenantId: string; sessionId: string; fence: number },
  take: () => Promise<T>,
): Promise<T> {
  const { promise: gate, resolve: release } = Promise.withResolvers<void>();
  const { promise: inside, resolve: entered } = Promise.withResolvers<void>();
  const writer = withFence(db, ids, async (trx) => {
    entered();
    await gate;
    await appendUserMessage(trx, {
      tenantId: ids.tenantId,
      sessionId: ids.sessionId,
      agent: 'build',
      parts: [{ type: 'text', text: 'by the old holder', tokens: 1 }],
    });
  });
  await inside;
  try {
    return await take();
  } finally {
    release();
    await writer;
  }
}

describe('fence', () => {
  test('acquireFence increments the session fence', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    expect(session.fence).toBe(0);
    expect(await acquireFence(pg.db, tenant.id, session.id)).toBe(1);
    expect(await acquireFence(pg.db, tenant.id, session.id)).toBe(2);
    expect(await currentFence(pg.db, tenant.id, session.id)).toBe(2);
    await expect(acquireFence(pg.db, tenant.id, 'ses_missing')).rejects.toBeInstanceOf(NotFoundError);
  });

  test('a current fence writes; a stale fence is rejected and nothing is written', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const old = await acquireFence(pg.db, tenant.id, session.id);
    const f = { tenantId: tenant.id, sessionId: session.id, fence: old };
    const write = (text: string) =>
      withFence(pg.db, f, async (trx) => {
        await appendUserMessage(trx, {
          tenantId: tenant.id,
          sessionId: session.id,
          agent: 'build',
          parts: [{ type: 'text', text, tokens: 1 }],
        });
        await updateSessionProgress(trx, tenant.id, session.id, { stepCount: 7 });
        await setSessionStatus(trx, tenant.id, session.id, 'running');
        return text;
      });
    expect(await write('by the holder')).toBe('by the holder');

    const newer = await acquireFence(pg.db, tenant.id, session.id);
    expect(newer).toBe(old + 1);
    const error = await write('by a stale holder').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleFenceError);
    expect(error).toBeInstanceOf(LooplineError);
    expect((error as StaleFenceError).code).toBe('StaleFenceError');
    expect((error as StaleFenceError).data).toEqual({
      sessionId: session.id,
      fence: old,
      currentFence: newer,
    });

    const history = await loadHistory(pg.db, tenant.id, session.id);
    expect(history.map((m) => (m.parts[0] as { text: string }).text)).toEqual(['by the holder']);
    const after = await getSession(pg.db, tenant.id, session.id);
    expect(after).toMatchObject({ stepCount: 7, status: 'running', fence: newer, lastSeq: 1 });
  });

  test('an error inside the fenced transaction rolls everything back', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const fence = await acquireFence(pg.db, tenant.id, session.id);
    await expect(
      withFence(pg.db, { tenantId: tenant.id, sessionId: session.id, fence }, async (trx) => {
        await updateSessionProgress(trx, tenant.id, session.id, { stepCount: 3 });
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect((await getSession(pg.db, tenant.id, session.id))?.stepCount).toBe(0);
  });

  test('a new holder waits for the old holder to commit, after which the old fence is stale', async ({
    pg,
  }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const old = await acquireFence(pg.db, tenant.id, session.id);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const f = { tenantId: tenant.id, sessionId: session.id, fence: old };
    const slow = withFence(pg.db, f, async (trx) => {
      entered();
      await gate;
      await updateSessionProgress(trx, tenant.id, session.id, { stepCount: 1 });
    });
    await inside;
    let acquired: number | undefined;
    const takeover = acquireFence(pg.db, tenant.id, session.id).then((n) => {
      acquired = n;
      return n;
    });
    await until('the takeover parked on the session row lock', async () => (await lockWaiters(pg.db)) === 1);
    expect(acquired).toBeUndefined(); // blocked on the session row lock
    release();
    await slow;
    expect(await takeover).toBe(old + 1);
    await expect(withFence(pg.db, f, async () => 'late')).rejects.toBeInstanceOf(StaleFenceError);
    expect((await getSession(pg.db, tenant.id, session.id))?.stepCount).toBe(1);
  });

  test('a fence of another tenant is stale', async ({ pg }) => {
    const a = await makeSessionWithTenant(pg.db);
    const b = await makeSessionWithTenant(pg.db);
    const fence = await acquireFence(pg.db, a.tenant.id, a.session.id);
    await expect(
      withFence(pg.db, { tenantId: b.tenant.id, sessionId: a.session.id, fence }, async () => 'x'),
    ).rejects.toBeInstanceOf(StaleFenceError);
  });

  test('acquireFenceWithSession returns the row as the increment left it', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const { fence, session: row } = await acquireFenceWithSession(pg.db, tenant.id, session.id);
    expect(fence).toBe(1);
    expect(row).toEqual(await getSession(pg.db, tenant.id, session.id));
    await expect(acquireFenceWithSession(pg.db, tenant.id, 'ses_missing')).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });

  test('acquireFenceWithChanges: the fence bump and the changes since a revision in one statement', async ({
    pg,
  }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const append = (text: string) => appendText(pg.db, tenant.id, session.id, [text]);
    await append('one');
    const snap = await loadHistorySnapshot(pg.db, tenant.id, session.id, null);
    await append('two');
    const expected = await historyChangesSince(pg.db, tenant.id, session.id, snap!.rev);
    const taken = await acquireFenceWithChanges(pg.db, tenant.id, session.id, snap!.rev);
    expect(taken?.fence).toBe(1);
    expect(taken?.session).toEqual(await getSession(pg.db, tenant.id, session.id));
    expect(taken?.changes).toEqual(expected);
    expect(taken?.changes.messages).toHaveLength(1);
    expect(await acquireFenceWithChanges(pg.db, tenant.id, 'ses_missing', 0)).toBeNull();
  });

  test('acquireFenceWithChanges takes nothing, without waiting, while a writer holds the row', async ({
    pg,
  }) => {
    // The writer may commit a message its snapshot does not hold, so its changes could miss it:
    // null at once (the caller takes the fence apart, waiting alone), and the fence is not bumped.
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const old = await acquireFence(pg.db, tenant.id, session.id);
    const snap = await loadHistorySnapshot(pg.db, tenant.id, session.id, null);
    const ids = { tenantId: tenant.id, sessionId: session.id, fence: old };
    const parked = await whileAWriterHoldsTheRow(pg.db, ids, () =>
      acquireFenceWithChanges(pg.db, tenant.id, session.id, snap!.rev),
    );
    expect(parked).toBeNull();
    expect(await currentFence(pg.db, tenant.id, session.id)).toBe(old);
    // Uncontended, the same call sees the old holder's message.
    const taken = await acquireFenceWithChanges(pg.db, tenant.id, session.id, snap!.rev);
    expect(taken?.fence).toBe(old + 1);
    expect(taken?.changes.messages).toHaveLength(1);
  });

  test('acquireFenceWithSnapshot: the fence bump and the log from the boundary in one statement', async ({
    pg,
  }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const append = (text: string) => appendText(pg.db, tenant.id, session.id, [text, `${text}, again`]);
    await append('one');
    const two = await append('two');
    await append('three');
    // A boundary: the log starts at the second message.
    await pg.db
      .updateTable('sessions')
      .set({ boundary_seq: two.info.seq })
      .where('id', '=', session.id)
      .execute();
    const expected = await loadHistorySnapshot(pg.db, tenant.id, session.id, two.info.seq);
    const taken = await acquireFenceWithSnapshot(pg.db, tenant.id, session.id);
    expect(taken?.fence).toBe(1);
    expect(taken?.session).toEqual(await getSession(pg.db, tenant.id, session.id));
    expect(taken?.snapshot).toEqual(expected);
    expect(taken?.snapshot?.history.map((m) => m.parts.length)).toEqual([2, 2]);
    expect(await acquireFenceWithSnapshot(pg.db, tenant.id, 'ses_missing')).toBeNull();
    // Above the size cap: the fence alone (bumped), the log left to a read of its own.
    const capped = await acquireFenceWithSnapshot(pg.db, tenant.id, session.id, 10);
    expect(capped?.fence).toBe(2);
    expect(capped?.snapshot).toBeUndefined();
  });

  test('acquireFenceWithSnapshot takes nothing, without waiting, while a writer holds the row', async ({
    pg,
  }) => {
    // Its snapshot would predate the writer's message: returning it with the newer row would lose
    // the message. Null at once (the caller takes the fence apart), and the fence is not bumped.
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const old = await acquireFence(pg.db, tenant.id, session.id);
    const ids = { tenantId: tenant.id, sessionId: session.id, fence: old };
    expect(
      await whileAWriterHoldsTheRow(pg.db, ids, () => acquireFenceWithSnapshot(pg.db, tenant.id, session.id)),
    ).toBeNull();
    expect(await currentFence(pg.db, tenant.id, session.id)).toBe(old);
    const taken = await acquireFenceWithSnapshot(pg.db, tenant.id, session.id);
    expect(taken?.fence).toBe(old + 1);
    expect(taken?.snapshot?.history).toHaveLength(1);
    expect(taken?.snapshot?.lastSeq).toBe(taken?.session.lastSeq);
  });

  test('a patch folded into the fence check writes with it, and nothing when stale', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const old = await acquireFence(pg.db, tenant.id, session.id);
    const f = { tenantId: tenant.id, sessionId: session.id, fence: old };
    const step = (n: number) =>
      withFence(
        pg.db,
        f,
        async (trx, row) =>
          createAssistantMessage(trx, {
            tenantId: tenant.id,
            sessionId: session.id,
            id: `msg_step${n}`,
            seq: row.lastSeq,
            parentId: 'msg_x',
            model: 'openai/gpt-4o-mini',
            agent: 'build',
          }),
        {
          allocateSeq: true,
          stepCount: n,
          status: { status: 'running' },
          tokenRatio: 1.5,
        },
      );
    const first = await step(1);
    expect(first.seq).toBe(1);
    expect((await step(2)).seq).toBe(2);
    expect(await getSession(pg.db, tenant.id, session.id)).toMatchObject({
      stepCount: 2,
      status: 'running',
      tokenRatio: 1.5,
      lastSeq: 2,
      fence: old,
    });
    await acquireFence(pg.db, tenant.id, session.id);
    await expect(step(3)).rejects.toBeInstanceOf(StaleFenceError);
    expect(await getSession(pg.db, tenant.id, session.id)).toMatchObject({ stepCount: 2, lastSeq: 2 });
    expect((await loadHistory(pg.db, tenant.id, session.id)).map((m) => m.info.id)).toEqual([
      'msg_step1',
      'msg_step2',
    ]);
  });

  test('appendUserMessageAndQueue: seq, wake-up, mid-run and parts in order; 404 for another tenant', async ({
    pg,
  }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const append = (tenantId: string, text: string) =>
      appendUserMessageAndQueue(pg.db, {
        tenantId,
        sessionId: session.id,
        parts: [
          { type: 'text', text, tokens: 2 },
          { type: 'file', url: 'https://example.com/a.png', mime: 'image/png', tokens: 0 },
        ],
        wakeFrom: ['idle', 'error'],
        midRunIn: ['running', 'compacting', 'waiting'],
      });
    const first = await append(tenant.id, 'one');
    expect(first?.statusChanged).toBe(true);
    expect(first?.session).toMatchObject({ status: 'queued', lastSeq: 1 });
    expect(first?.message.info).toMatchObject({ seq: 1, role: 'user', agent: session.agentName });
    expect(first?.message.info).not.toHaveProperty('midRun');
    const second = await append(tenant.id, 'two');
    expect(second?.statusChanged).toBe(false);
    await setSessionStatus(pg.db, tenant.id, session.id, 'running');
    const third = await append(tenant.id, 'three');
    expect(third?.statusChanged).toBe(false);
    expect(third?.session.status).toBe('running');
    expect(third?.message.info).toMatchObject({ seq: 3, midRun: true });
    const other = await makeSessionWithTenant(pg.db);
    expect(await append(other.tenant.id, 'not yours')).toBeUndefined();
    const history = await loadHistory(pg.db, tenant.id, session.id);
    expect(history.map((m) => m.info.seq)).toEqual([1, 2, 3]);
    expect(history[0]!.parts.map((p) => p.type)).toEqual(['text', 'file']);
    expect(history[0]).toEqual(first!.message);
    expect((await getSession(pg.db, tenant.id, session.id))?.lastSeq).toBe(3);
  });
});

describe('acquireStepFences (group commit of step fences)', () => {
  test('each session gets fence + 1, its row and the changes since its own revision', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 4);
    const revs: number[] = [];
    for (const [i, id] of ids.entries()) {
      await appendText(pg.db, tenantId, id, [`first of ${i}`]);
      revs.push((await loadHistorySnapshot(pg.db, tenantId, id, null))!.rev);
      // Different amounts of news per session (none for the last).
      for (let k = 0; k < 3 - i; k++) await appendText(pg.db, tenantId, id, [`news ${k}`, `more ${k}`]);
    }
    const before = await Promise.all(ids.map((id) => currentFence(pg.db, tenantId, id)));
    const expected = await Promise.all(
      ids.map((id, i) => historyChangesSince(pg.db, tenantId, id, revs[i]!)),
    );
    const results = (await acquireStepFences(
      pg.db,
      ids.map((sessionId, i) => ({ tenantId, sessionId, rev: revs[i]! })),
    )) as Array<FenceWithChanges | null>;
    for (const [i, id] of ids.entries()) {
      const taken = results[i];
      expect(taken?.fence).toBe(before[i]! + 1);
      expect(taken?.session).toEqual(await getSession(pg.db, tenantId, id));
      expect(taken?.changes).toEqual(expected[i]);
      expect(taken?.changes.messages).toHaveLength(3 - i);
    }
  });

  test('a session asked without a revision gets its whole log from the boundary, beside the changes of the others', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 4);
    const revs: number[] = [];
    for (const id of ids) {
      await appendText(pg.db, tenantId, id, ['one', 'one, again']);
      revs.push((await loadHistorySnapshot(pg.db, tenantId, id, null))!.rev);
      await appendText(pg.db, tenantId, id, ['two', 'two, again']);
    }
    // The last session's log starts at its second message (a compaction boundary).
    const boundary = (await getSession(pg.db, tenantId, ids[3]!))!.lastSeq;
    await pg.db.updateTable('sessions').set({ boundary_seq: boundary }).where('id', '=', ids[3]!).execute();
    // Sessions 0 and 2 are cached here (their revision), 1 and 3 are not (the whole log).
    const requests = ids.map((sessionId, i) => ({
      tenantId,
      sessionId,
      rev: i % 2 === 0 ? revs[i]! : undefined,
    }));
    const changes = await historyChangesSince(pg.db, tenantId, ids[0]!, revs[0]!);
    const whole = [
      await loadHistorySnapshot(pg.db, tenantId, ids[1]!, null),
      await loadHistorySnapshot(pg.db, tenantId, ids[3]!, boundary),
    ];
    const results = await acquireStepFences(pg.db, requests);
    for (const [i, id] of ids.entries()) {
      expect(results[i]?.fence).toBe(1);
      expect(results[i]?.session).toEqual(await getSession(pg.db, tenantId, id));
    }
    const [a, b, c, d] = results as [
      FenceWithChanges,
      FenceWithSnapshot,
      FenceWithChanges,
      FenceWithSnapshot,
    ];
    expect(a.changes).toEqual(changes);
    expect(c.changes.messages).toHaveLength(1);
    expect('snapshot' in a || 'changes' in b).toBe(false);
    expect(b.snapshot).toEqual(whole[0]);
    expect(b.snapshot?.history).toHaveLength(2);
    expect(d.snapshot).toEqual(whole[1]);
    expect(d.snapshot?.history.map((m) => m.info.seq)).toEqual([boundary]);
  });

  test('whole logs share one byte budget per statement, in request order; a session past it gets its fence alone', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 4);
    for (const id of ids) await appendText(pg.db, tenantId, id, ['x'.repeat(400)]);
    const one = await loadHistorySnapshot(pg.db, tenantId, ids[0]!, null);
    const bytes = await storedLogBytes(pg.db, ids[0]!);
    // Room for two whole logs; the third session's would pass it. A cached session (the last)
    // reads only its changes and is not counted.
    const results = await acquireStepFences(
      pg.db,
      [
        { tenantId, sessionId: ids[0]! },
        { tenantId, sessionId: ids[1]! },
        { tenantId, sessionId: ids[2]! },
        { tenantId, sessionId: ids[3]!, rev: 0 },
      ],
      bytes * 2 + bytes / 2,
    );
    expect(results.map((r) => r?.fence)).toEqual([1, 1, 1, 1]);
    const [a, b, c, d] = results as [
      FenceWithSnapshot,
      FenceWithSnapshot,
      FenceWithSnapshot,
      FenceWithChanges,
    ];
    expect(a.snapshot).toEqual(one);
    expect(b.snapshot?.history).toHaveLength(1);
    expect(c.snapshot).toBeUndefined();
    expect(d.changes.messages).toHaveLength(1);
    // A log larger than the whole budget gets its fence alone and does not crowd out the next.
    // (Random text: PostgreSQL would compress a repeated one to a few bytes.)
    await appendText(pg.db, tenantId, ids[0]!, [randomBytes(3_000).toString('base64')]);
    const [big, small] = (await acquireStepFences(
      pg.db,
      [
        { tenantId, sessionId: ids[0]! },
        { tenantId, sessionId: ids[1]! },
      ],
      bytes * 2 + bytes / 2,
    )) as [FenceWithSnapshot, FenceWithSnapshot];
    expect(big.fence).toBe(2);
    expect(big.snapshot).toBeUndefined();
    expect(small.snapshot?.history).toHaveLength(1);
  });

  test("another tenant's session answers null and keeps its fence; the others are taken", async ({ pg }) => {
    const mine = await makeSessions(pg.db, 2);
    const theirs = await makeSessionWithTenant(pg.db);
    const results = await acquireStepFences(pg.db, [
      { tenantId: mine.tenantId, sessionId: mine.ids[0]!, rev: 0 },
      { tenantId: mine.tenantId, sessionId: theirs.session.id, rev: 0 },
      { tenantId: mine.tenantId, sessionId: mine.ids[1]!, rev: 0 },
    ]);
    expect(results[1]).toBeNull();
    expect(await currentFence(pg.db, theirs.tenant.id, theirs.session.id)).toBe(0);
    for (const i of [0, 2]) expect(results[i]?.fence).toBe(1);
  });

  test('a session whose row another transaction holds answers null at once, unbumped; the rest of the batch is taken', async ({
    pg,
  }) => {
    // The holder may be the session's previous runner, frozen mid-transaction: the batch must not
    // wait for it (the caller takes that one fence alone).
    const { tenantId, ids } = await makeSessions(pg.db, 3);
    const old = await acquireFence(pg.db, tenantId, ids[1]!);
    const snaps = await Promise.all(ids.map((id) => loadHistorySnapshot(pg.db, tenantId, id, null)));
    const held = { tenantId, sessionId: ids[1]!, fence: old };
    const [results, lone, loneWhole] = await whileAWriterHoldsTheRow(pg.db, held, async () => [
      // The first session asks for its whole log: the kinds share the statement.
      await acquireStepFences(
        pg.db,
        ids.map((sessionId, i) => ({ tenantId, sessionId, rev: i === 0 ? undefined : snaps[i]!.rev })),
      ),
      // Alone as well: the statement of one session does not wait either.
      await acquireStepFences(pg.db, [{ tenantId, sessionId: ids[1]!, rev: snaps[1]!.rev }]),
      await acquireStepFences(pg.db, [{ tenantId, sessionId: ids[1]! }]),
    ]);
    expect(results![1]).toBeNull();
    for (const i of [0, 2]) expect(results![i]?.fence).toBe(1);
    expect(lone).toEqual([null]);
    expect(loneWhole).toEqual([null]);
    expect(await currentFence(pg.db, tenantId, ids[1]!)).toBe(old);
  });

  test('one fence per session in a batch', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 1);
    const twice = [0, 0].map(() => ({ tenantId, sessionId: ids[0]!, rev: 0 }));
    await expect(acquireStepFences(pg.db, twice)).rejects.toBeInstanceOf(TypeError);
    expect(await currentFence(pg.db, tenantId, ids[0]!)).toBe(0);
  });
});
