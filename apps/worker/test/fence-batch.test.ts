import {
  appendUserMessage,
  currentFence,
  type Db,
  type FenceWithChanges,
  type FenceWithSnapshot,
  loadHistorySnapshot,
  type StepFence,
  withFence,
} from '@loopline/db';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../../packages/testkit/src/fixtures.ts';
import { makeSessions } from '../../../packages/testkit/src/index.ts';
import { createWorkerMetrics } from '../src/metrics.ts';
import { createStepFences, stepFencesOf } from '../src/step/fence-batch.ts';

// The worker's group commit of step fences on real PostgreSQL: fences that would queue for a
// statement slot are taken in one statement together, each session getting its own fence and its
// own log changes.

function say(db: Db, tenantId: string, sessionId: string, text: string) {
  return appendUserMessage(db, {
    tenantId,
    sessionId,
    agent: 'build',
    parts: [{ type: 'text', text, tokens: 1 }],
  });
}

/** Sessions with one message each, the revision after it, then `news(i)` more messages. */
async function sessionsWithNews(db: Db, n: number, news: (i: number) => number) {
  const { tenantId, ids } = await makeSessions(db, n);
  const revs: number[] = [];
  for (const [i, id] of ids.entries()) {
    await say(db, tenantId, id, 'first');
    revs.push((await loadHistorySnapshot(db, tenantId, id, null))!.rev);
    for (let k = 0; k < news(i); k++) await say(db, tenantId, id, `news ${k}`);
  }
  return { tenantId, ids, revs };
}

/** The changes a fence read (it was asked with a revision). */
function changesOf(taken: StepFence | null | undefined) {
  return (taken as FenceWithChanges | null | undefined)?.changes;
}

/** The promise's value, or a failure when it waits for the held row (5 s: far beyond a statement). */
function promptly<T>(p: Promise<T>): Promise<T> {
  return Promise.race([
    p,
    new Promise<never>((_, reject) =>
      setTimeout(
        () => reject(new Error('the fence waited for a row another transaction holds')),
        5_000,
      ).unref(),
    ),
  ]);
}

describe('step-fence group commit', () => {
  test("queued fences share a statement; each session gets its own fence and its own log's changes", async ({
    pg,
  }) => {
    const { tenantId, ids, revs } = await sessionsWithNews(pg.db, 10, (i) => i % 3);
    const sizes: number[] = [];
    const fences = createStepFences(pg.db, { concurrency: 1, maxBatch: 64 }, (n) => sizes.push(n));
    const taken = await Promise.all(
      ids.map((sessionId, i) => fences.submit({ tenantId, sessionId, rev: revs[i]! })),
    );
    expect(fences.stats.largest).toBeGreaterThan(1);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(10);
    for (const [i, sessionId] of ids.entries()) {
      expect(taken[i]?.session.id).toBe(sessionId);
      expect(taken[i]?.fence).toBe(1);
      expect(await currentFence(pg.db, tenantId, sessionId)).toBe(1);
      expect(changesOf(taken[i])?.messages.map((m) => m.seq)).toEqual(
        Array.from({ length: i % 3 }, (_, k) => k + 2),
      );
    }
  });

  test('first steps on this worker (no cached log) share the statement with the others and get their whole log', async ({
    pg,
  }) => {
    const { tenantId, ids, revs } = await sessionsWithNews(pg.db, 8, () => 1);
    const fences = createStepFences(pg.db, { concurrency: 1, maxBatch: 64 });
    // Even sessions are cached here (their revision), odd ones are not.
    const taken = await Promise.all(
      ids.map((sessionId, i) =>
        fences.submit({ tenantId, sessionId, rev: i % 2 === 0 ? revs[i]! : undefined }),
      ),
    );
    expect(fences.stats.largest).toBeGreaterThan(1);
    for (const [i, sessionId] of ids.entries()) {
      expect(taken[i]?.fence).toBe(1);
      if (i % 2 === 0) expect(changesOf(taken[i])?.messages).toHaveLength(1);
      else
        expect((taken[i] as FenceWithSnapshot).snapshot).toEqual(
          await loadHistorySnapshot(pg.db, tenantId, sessionId, null),
        );
    }
  });

  test('batching off (maxBatch 1): every fence is its own statement', async ({ pg }) => {
    const { tenantId, ids, revs } = await sessionsWithNews(pg.db, 4, () => 1);
    const sizes: number[] = [];
    const fences = createStepFences(pg.db, { concurrency: 1, maxBatch: 1 }, (n) => sizes.push(n));
    const taken = await Promise.all(
      ids.map((sessionId, i) => fences.submit({ tenantId, sessionId, rev: revs[i]! })),
    );
    expect(sizes).toEqual([1, 1, 1, 1]);
    expect(taken.map((t) => changesOf(t)?.messages.length)).toEqual([1, 1, 1, 1]);
  });

  test("a worker's default group commit reports each statement's fences in loopline_step_fence_batch_fences", async ({
    pg,
  }) => {
    const { tenantId, ids, revs } = await sessionsWithNews(pg.db, 6, () => 0);
    const metrics = createWorkerMetrics({ defaultMetrics: false });
    const deps = { db: pg.db, metrics };
    // The same group commit for every step of this deps object.
    expect(stepFencesOf(deps)).toBe(stepFencesOf(deps));
    await Promise.all(
      ids.map((sessionId, i) => stepFencesOf(deps).submit({ tenantId, sessionId, rev: revs[i]! })),
    );
    const metric = (await metrics.registry.getMetricsAsJSON()).find(
      (m) => m.name === 'loopline_step_fence_batch_fences',
    );
    const series = (metric?.values ?? []) as Array<{ metricName?: string; value: number }>;
    const read = (name: string) => series.find((v) => v.metricName === name)?.value;
    expect(read('loopline_step_fence_batch_fences_sum')).toBe(6);
    // One statement at a time by default: the fences that queued behind the first went together.
    expect(read('loopline_step_fence_batch_fences_count')).toBeLessThan(6);
  });

  test("a session whose row another transaction holds never holds up the others' fences: it answers null at once", async ({
    pg,
  }) => {
    // The holder may be the session's previous runner, frozen mid-transaction. One statement at a
    // time: if the held session's statement waited for the row, every fence behind it would too.
    const { tenantId, ids, revs } = await sessionsWithNews(pg.db, 3, () => 1);
    const { promise: gate, resolve: release } = Promise.withResolvers<void>();
    const { promise: inside, resolve: entered } = Promise.withResolvers<void>();
    const holder = withFence(pg.db, { tenantId, sessionId: ids[0]!, fence: 0 }, async () => {
      entered();
      await gate;
    });
    await inside;
    try {
      const fences = createStepFences(pg.db, { concurrency: 1, maxBatch: 64 });
      const lone = await promptly(fences.submit({ tenantId, sessionId: ids[0]!, rev: revs[0]! }));
      expect(lone).toBeNull();
      // Nor when this worker holds no log of it (its first step here).
      expect(await promptly(fences.submit({ tenantId, sessionId: ids[0]! }))).toBeNull();
      const taken = await promptly(
        Promise.all(ids.map((sessionId, i) => fences.submit({ tenantId, sessionId, rev: revs[i]! }))),
      );
      expect(taken[0]).toBeNull();
      expect(taken.slice(1).map((t) => t?.fence)).toEqual([1, 1]);
    } finally {
      release();
      await holder;
    }
    expect(await currentFence(pg.db, tenantId, ids[0]!)).toBe(0);
  });
});
