import {
  filterCompacted,
  loopFacts,
  newId,
  type Part,
  requestMessages,
  type TextPart,
  type ToolPart,
  toRequestMessages,
} from '@loopline/core';
import {
  acquireFence,
  acquireFenceWithChanges,
  acquireFenceWithSnapshot,
  appendUserMessage,
  createAssistantMessage,
  type Db,
  getSession,
  insertParts,
  loadHistory,
  markReverted,
  type SessionInfo,
  updateMessageInfo,
  updatePart,
  updateSessionProgress,
  userMessagesAfter,
  withFence,
} from '@loopline/db';
import { createTokenizer, toProviderPrompt } from '@loopline/llm';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../../packages/testkit/src/fixtures.ts';
import { makeSessionWithTenant } from '../../../packages/testkit/src/index.ts';
import { factsOf, type PrefetchedChanges, SessionCache } from '../src/session-cache.ts';
import { loadContext } from '../src/session-context.ts';

// The session cache against real PostgreSQL: after every kind of write the log sees (appends by
// this worker, another worker and the gateway; tool results; prune marks; a compaction that moves
// the boundary; a revert; fence changes), what the cache returns equals a fresh load, and the
// context built on it equals the one built without a cache.

type Fixture = Awaited<ReturnType<typeof makeSessionWithTenant>>;

function writerOf(db: Db, fx: Fixture) {
  const tenantId = fx.tenant.id;
  const sessionId = fx.session.id;
  let fence = 0;
  const fenced = <T>(fn: Parameters<typeof withFence<T>>[2]) =>
    withFence(db, { tenantId, sessionId, fence }, fn);
  return {
    tenantId,
    sessionId,
    /** A new runner takes the session (acquireFence), as every job and the gateway's revert do. */
    async takeFence() {
      fence = await acquireFence(db, tenantId, sessionId);
    },
    /** A user message, as the gateway writes it. */
    user(text: string, extra: { midRun?: boolean } = {}) {
      return appendUserMessage(db, {
        tenantId,
        sessionId,
        agent: fx.agent.name,
        parts: [{ type: 'text', text, tokens: text.length }],
        ...extra,
      });
    },
    /** A model step: message, step-start, text, a tool call, its result and the finish. */
    async step(parentId: string, n: number): Promise<{ id: string; tool: ToolPart }> {
      const message = await fenced((trx) =>
        createAssistantMessage(trx, {
          tenantId,
          sessionId,
          parentId,
          model: fx.agent.config.model,
          agent: fx.agent.name,
          step: n,
        }),
      );
      const base = { sessionId, messageId: message.id };
      const text: TextPart = { ...base, id: newId('prt'), type: 'text', text: `answer ${n}`, tokens: 3 };
      const tool: ToolPart = {
        ...base,
        id: newId('prt'),
        type: 'tool',
        callId: `call_${n}`,
        tool: 'lookup',
        state: { status: 'running', input: { q: n }, time: { start: 1 } },
        tokens: 5,
      };
      await fenced((trx) =>
        insertParts(trx, tenantId, [
          { ...base, id: newId('prt'), type: 'step-start', tokens: 0 },
          text,
          tool,
        ]),
      );
      // The provider's report: the anchor of the next estimate (an older output pruned after it
      // lowers that estimate, so prune is seen through the estimate too).
      const usage = { input: 100 * n + 50, output: 10, reasoning: 0, cache: { read: 0, write: 0 }, total: 0 };
      await fenced((trx) =>
        insertParts(trx, tenantId, [
          { ...base, id: newId('prt'), type: 'step-finish', reason: 'tool-calls', usage, tokens: 0 },
        ]),
      );
      const done: ToolPart = {
        ...tool,
        state: {
          status: 'completed',
          input: { q: n },
          output: `result ${n} `.repeat(20),
          title: '',
          metadata: {},
          time: { start: 1, end: 2 },
        },
        tokens: 45,
        outputTokens: 40,
      };
      await fenced(async (trx) => {
        await updatePart(trx, tenantId, done);
        await updateMessageInfo(trx, tenantId, {
          ...message,
          finish: 'tool-calls',
          time: { ...message.time, completed: 3 },
        });
      });
      return { id: message.id, tool: done };
    },
    /** Prune: the output is marked compacted (docs/context.md §3.2), the row is updated in place. */
    prune(part: ToolPart) {
      if (part.state.status !== 'completed') throw new Error('not completed');
      const pruned = { ...part, state: { ...part.state, time: { ...part.state.time, compacted: 10 } } };
      return fenced((trx) => updatePart(trx, tenantId, pruned as Part));
    },
    /** A completed compaction: its message, the summary, the boundary pointer moved to it. */
    async compaction(): Promise<number> {
      const marker = await fenced((trx) =>
        appendUserMessage(trx, {
          tenantId,
          sessionId,
          agent: fx.agent.name,
          synthetic: true,
          parts: [{ type: 'compaction', auto: true, overflow: false, tokens: 4 }],
        }),
      );
      await fenced(async (trx) => {
        const summary = await createAssistantMessage(trx, {
          tenantId,
          sessionId,
          parentId: marker.info.id,
          model: fx.agent.config.model,
          agent: fx.agent.name,
          summary: true,
        });
        await insertParts(trx, tenantId, [
          { sessionId, messageId: summary.id, id: newId('prt'), type: 'text', text: 'summary', tokens: 2 },
        ]);
        await updateMessageInfo(trx, tenantId, {
          ...summary,
          finish: 'stop',
          time: { ...summary.time, completed: 4 },
        });
      });
      await fenced((trx) =>
        updateSessionProgress(trx, tenantId, sessionId, { boundarySeq: marker.info.seq }),
      );
      return marker.info.seq;
    },
    /** A revert (the gateway's): messages from `fromSeq` hidden, a new fence. */
    async revert(fromSeq: number) {
      await db.transaction().execute(async (trx) => {
        await markReverted(trx, tenantId, sessionId, fromSeq);
      });
      await this.takeFence();
    },
    clearMidRun(afterSeq: number) {
      return fenced((trx) => userMessagesAfter(trx, tenantId, sessionId, afterSeq, true));
    },
  };
}

function depsWith(db: Db, sessionCache: SessionCache | null) {
  return { db, tokenizer: createTokenizer('o200k_base'), sessionCache };
}

/**
 * The cache's answer equals a fresh load (log and view); returns whether it was a hit. `prefetch`:
 * the changes come from the fence statement, as a step job reads them (lease-runner; a new fence).
 */
async function same(
  db: Db,
  cache: SessionCache,
  tenantId: string,
  sessionId: string,
  prefetch = false,
): Promise<boolean> {
  // As lease-runner takes it: the changes of the cached log, else the whole log, with the fence.
  const since = prefetch ? cache.revOf(tenantId, sessionId) : undefined;
  let session: SessionInfo | undefined;
  let prefetched: PrefetchedChanges | undefined;
  if (prefetch && since !== undefined) {
    const taken = await acquireFenceWithChanges(db, tenantId, sessionId, since);
    session = taken?.session;
    if (taken) prefetched = { since, changes: taken.changes };
  } else if (prefetch) {
    const taken = await acquireFenceWithSnapshot(db, tenantId, sessionId);
    session = taken?.session;
    if (taken?.snapshot) {
      prefetched = { fromSeq: taken.session.boundarySeq, snapshot: taken.snapshot };
      snapshotsPrefetched++;
    }
  }
  session ??= (await getSession(db, tenantId, sessionId))!;
  const got = await cache.history({ db }, tenantId, sessionId, session.boundarySeq, prefetched);
  const cold = await loadHistory(db, tenantId, sessionId, { fromSeq: session.boundarySeq });
  expect(got!.history).toEqual(cold);
  expect(got!.compacted).toEqual(filterCompacted(cold));
  // The context built on it equals the one built without a cache (view, estimate, shape).
  const cached = await loadContext(depsWith(db, cache), tenantId, sessionId, session);
  const plain = await loadContext(depsWith(db, null), tenantId, sessionId, session);
  expect(cached!.view).toEqual(plain!.view);
  expect(cached!.prompt).toEqual(plain!.prompt);
  expect(cached!.shape.overheadTokens).toBe(plain!.shape.overheadTokens);
  // The facts it keeps up to date equal the facts of a fresh load.
  expect(got!.facts).toEqual(factsOf(filterCompacted(cold)));
  expect(got!.logFacts).toEqual(loopFacts(cold));
  expect(cached!.facts).toEqual(plain!.facts);
  expect(cached!.logFacts).toEqual(plain!.logFacts);
  // The model request continued from the previous check's equals a fresh conversion.
  const memo = cached!.memo!;
  const request = requestMessages(cached!.view, { steer: true }, memo.request);
  memo.request = request.state;
  const fresh = toRequestMessages(plain!.view, { steer: true });
  expect(request.messages).toEqual(fresh.messages);
  expect(toProviderPrompt(['s'], request.messages, memo)).toEqual(toProviderPrompt(['s'], fresh.messages));
  return got!.hit;
}

const big = { maxEntries: 100, maxBytes: 64 * 1024 * 1024 };
/** Loads that used the log read with the fence (acquireFenceWithSnapshot), across the file. */
let snapshotsPrefetched = 0;

describe('session cache', () => {
  test('a hit equals a fresh load after appends, tool results, prune, compaction, revert and fence changes', async ({
    pg,
  }) => {
    const fx = await makeSessionWithTenant(pg.db);
    const w = writerOf(pg.db, fx);
    const cache = new SessionCache(big);
    const check = () => same(pg.db, cache, w.tenantId, w.sessionId);
    // Counted from here: `same` itself reads twice (the history, then loadContext).
    const hits = () => cache.stats.hits;

    await w.takeFence();
    const first = await w.user('hello');
    expect(await check()).toBe(false); // nothing cached yet

    // Appends by this runner: a step with a tool call and its result.
    const s1 = await w.step(first.info.id, 1);
    expect(await check()).toBe(true);

    // Another runner (a new fence, e.g. another worker) appends a step; the gateway a message.
    await w.takeFence();
    const s2 = await w.step(first.info.id, 2);
    await w.user('more', { midRun: true });
    expect(await check()).toBe(true);

    // Prune marks an old output compacted: an update in place, merged, no reload.
    await w.prune(s1.tool);
    expect(await check()).toBe(true);

    // An update of an older message (midRun cleared by a compaction's held input).
    await w.clearMidRun(0);
    expect(await check()).toBe(true);

    // A compaction: its messages appended (the view moves to the new boundary)…
    const before = hits();
    const boundary = await w.compaction();
    // …and the boundary pointer moved: a different range, loaded afresh.
    expect(await check()).toBe(false);
    expect(cache.stats.misses.boundary).toBe(1);
    const after = await w.user('after the compaction');
    await w.step(after.info.id, 3);
    expect(await check()).toBe(true);
    expect(hits()).toBeGreaterThan(before);

    // A revert hides the newest messages (and takes a fence): reloaded.
    const session = (await getSession(pg.db, w.tenantId, w.sessionId))!;
    await w.revert(after.info.seq);
    const missesBefore = cache.stats.misses.changed;
    expect(await check()).toBe(false);
    expect(cache.stats.misses.changed).toBe(missesBefore + 1);
    expect(session.boundarySeq).toBe(boundary);

    // Life goes on after the revert.
    const again = await w.user('again');
    await w.step(again.info.id, 4);
    expect(await check()).toBe(true);
    expect(s2.id).toBeTruthy();
  });

  test('two workers writing in turn: each one catches up on the other through its delta', async ({ pg }) => {
    const fx = await makeSessionWithTenant(pg.db);
    const w = writerOf(pg.db, fx);
    const a = new SessionCache(big);
    const b = new SessionCache(big);
    await w.takeFence();
    const first = await w.user('hello');
    let parent = first.info.id;
    let tools: ToolPart[] = [];
    // A seeded walk over the write kinds, alternating the reading worker.
    let seed = 7;
    const rand = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 40; i++) {
      const r = rand();
      if (r < 0.35) {
        const s = await w.step(parent, i);
        tools.push(s.tool);
      } else if (r < 0.55) parent = (await w.user(`u${i}`, { midRun: rand() < 0.5 })).info.id;
      else if (r < 0.7 && tools.length > 0) {
        await w.prune(tools.shift()!);
      } else if (r < 0.8) await w.takeFence();
      else if (r < 0.85) {
        await w.compaction();
        tools = [];
      } else if (r < 0.9) await w.clearMidRun(0);
      await same(pg.db, rand() < 0.5 ? a : b, w.tenantId, w.sessionId);
    }
    expect(a.stats.hits + b.stats.hits).toBeGreaterThan(20);
  });

  test('changes read by the fence statement merge as the refresh does', async ({ pg }) => {
    // The step job's way (db acquireFenceWithChanges): the same seeded walk, each read taking a new
    // fence with the changes, after which the writer takes the session back.
    const fx = await makeSessionWithTenant(pg.db);
    const w = writerOf(pg.db, fx);
    const cache = new SessionCache(big);
    await w.takeFence();
    const first = await w.user('hello');
    let parent = first.info.id;
    let tools: ToolPart[] = [];
    let seed = 11;
    const rand = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 30; i++) {
      const r = rand();
      if (r < 0.4) {
        const s = await w.step(parent, i);
        tools.push(s.tool);
      } else if (r < 0.6) parent = (await w.user(`u${i}`, { midRun: rand() < 0.5 })).info.id;
      else if (r < 0.75 && tools.length > 0) await w.prune(tools.shift()!);
      else if (r < 0.85) {
        await w.compaction();
        tools = [];
      } else await w.clearMidRun(0);
      // Now and then the worker has no entry (evicted, a restart): the log comes with the fence.
      if (rand() < 0.2) cache.delete(w.sessionId);
      await same(pg.db, cache, w.tenantId, w.sessionId, true);
      await w.takeFence();
    }
    expect(cache.stats.hits).toBeGreaterThan(12);
    expect(snapshotsPrefetched).toBeGreaterThan(2);
  });

  test('what is not an append reloads (an older message back in the live log); rows never move', async ({
    pg,
  }) => {
    const fx = await makeSessionWithTenant(pg.db);
    const w = writerOf(pg.db, fx);
    const cache = new SessionCache(big);
    await w.takeFence();
    const m = await w.user('one');
    await w.user('two');
    expect(await same(pg.db, cache, w.tenantId, w.sessionId)).toBe(false);
    // A revert marks "two" and an operator brings it back: an older row re-entering the live log.
    await w.revert(m.info.seq + 1);
    expect(await same(pg.db, cache, w.tenantId, w.sessionId)).toBe(false);
    await pg.db
      .updateTable('messages')
      .set({ reverted: false })
      .where('session_id', '=', w.sessionId)
      .execute();
    expect(await same(pg.db, cache, w.tenantId, w.sessionId)).toBe(false);
    expect(cache.stats.misses.changed).toBe(2);
    const other = await makeSessionWithTenant(pg.db);

    // Rows never move: the cache merges a part by id within its message, so the database refuses
    // to move a part to another message or a row to another session (migration 0011).
    const newest = await w.user('three');
    await expect(
      pg.db
        .updateTable('parts')
        .set({ message_id: newest.info.id })
        .where('message_id', '=', m.info.id)
        .execute(),
    ).rejects.toThrow(/never move/);
    await expect(
      pg.db
        .updateTable('messages')
        .set({ session_id: other.session.id })
        .where('id', '=', m.info.id)
        .execute(),
    ).rejects.toThrow(/never move/);
    expect(await same(pg.db, cache, w.tenantId, w.sessionId)).toBe(true);
  });

  test('bounded: least recently used sessions go first, by count and by bytes', async ({ pg }) => {
    const small = new SessionCache({ maxEntries: 2, maxBytes: 64 * 1024 * 1024 });
    const fixtures = await Promise.all([1, 2, 3].map(() => makeSessionWithTenant(pg.db)));
    for (const fx of fixtures) {
      const w = writerOf(pg.db, fx);
      await w.takeFence();
      await w.user('x'.repeat(1000));
      await same(pg.db, small, w.tenantId, w.sessionId);
    }
    expect(small.stats.entries).toBe(2);
    expect(small.stats.evictions).toBe(1);
    // The first session was evicted: a miss; the third is still there: a hit.
    const [f1, , f3] = fixtures;
    expect(await same(pg.db, small, f1!.tenant.id, f1!.session.id)).toBe(false);
    expect(await same(pg.db, small, f3!.tenant.id, f3!.session.id)).toBe(true);

    const tiny = new SessionCache({ maxEntries: 10, maxBytes: 1_000 });
    const w = writerOf(pg.db, f3!);
    expect(await same(pg.db, tiny, w.tenantId, w.sessionId)).toBe(false);
    expect(tiny.stats.entries).toBe(0);
    expect(tiny.stats.misses.oversize).toBeGreaterThan(0);
  });
});
