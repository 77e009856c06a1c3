import { acquireFence, type Fence, listSteps, loadHistory, StaleFenceError } from '@loopline/db';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../../packages/testkit/src/fixtures.ts';
import { makeSessions, makeStepStart } from '../../../packages/testkit/src/index.ts';
import { createWorkerMetrics } from '../src/metrics.ts';
import { createStepStarts, stepStartsOf } from '../src/step/start-batch.ts';

// The worker's group commit of step starts on real PostgreSQL: starts that would queue for a
// statement slot go in one statement together, each with its own fence check; a stale start fails
// alone with StaleFenceError, and a session's second start waits for a later statement.

const start = (f: Fence, step: number) => makeStepStart(f, step, { status: 'running' });

describe('step-start group commit', () => {
  test('queued starts share a statement; each is fenced on its own; one start per session per batch', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 12);
    const fences: Fence[] = [];
    for (const sessionId of ids)
      fences.push({ tenantId, sessionId, fence: await acquireFence(pg.db, tenantId, sessionId) });
    // Session 5 has a newer runner: its start must fail alone.
    await acquireFence(pg.db, tenantId, ids[5]!);
    const sizes: number[] = [];
    const starts = createStepStarts(pg.db, { concurrency: 1, maxBatch: 64 }, (n) => sizes.push(n));
    const results = await Promise.allSettled([
      ...fences.map((f) => starts.submit(start(f, 1))),
      // A second start of session 0 in the same tick: behind its first, in a later statement.
      starts.submit(start(fences[0]!, 2)),
    ]);
    expect(starts.stats.largest).toBeGreaterThan(1);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(13);
    for (const [i, r] of results.entries()) {
      if (i === 5) {
        expect(r.status).toBe('rejected');
        expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StaleFenceError);
        continue;
      }
      expect(r.status).toBe('fulfilled');
    }
    for (const [i, sessionId] of ids.entries()) {
      const history = await loadHistory(pg.db, tenantId, sessionId);
      const steps = await listSteps(pg.db, tenantId, sessionId);
      if (i === 5) {
        expect(history).toEqual([]);
        expect(steps).toEqual([]);
        continue;
      }
      const expected = i === 0 ? [1, 2] : [1];
      expect(history.map((m) => m.info.seq)).toEqual(expected);
      expect(history.map((m) => (m.info.role === 'assistant' ? m.info.step : 0))).toEqual(expected);
      expect(history.every((m) => m.parts.map((p) => p.type).join() === 'step-start')).toBe(true);
      expect(steps.map((s) => s.step)).toEqual(expected);
    }
  });

  test('batching off (maxBatch 1): every start is its own statement', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 4);
    const sizes: number[] = [];
    const starts = createStepStarts(pg.db, { concurrency: 1, maxBatch: 1 }, (n) => sizes.push(n));
    await Promise.all(
      ids.map(async (sessionId) => {
        const f = { tenantId, sessionId, fence: await acquireFence(pg.db, tenantId, sessionId) };
        return starts.submit(start(f, 1));
      }),
    );
    expect(sizes).toEqual([1, 1, 1, 1]);
  });

  test("a worker's default group commit reports each statement's starts in loopline_step_start_batch_starts", async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 6);
    const metrics = createWorkerMetrics({ defaultMetrics: false });
    const deps = { db: pg.db, metrics };
    const fences = await Promise.all(
      ids.map(async (sessionId) => ({
        tenantId,
        sessionId,
        fence: await acquireFence(pg.db, tenantId, sessionId),
      })),
    );
    // The same group commit for every step of this deps object.
    expect(stepStartsOf(deps)).toBe(stepStartsOf(deps));
    await Promise.all(fences.map((f) => stepStartsOf(deps).submit(start(f, 1))));
    const metric = (await metrics.registry.getMetricsAsJSON()).find(
      (m) => m.name === 'loopline_step_start_batch_starts',
    );
    const series = (metric?.values ?? []) as Array<{ metricName?: string; value: number }>;
    const read = (name: string) => series.find((v) => v.metricName === name)?.value;
    expect(read('loopline_step_start_batch_starts_sum')).toBe(6);
    // One statement at a time by default: the starts that queued behind the first went together.
    expect(read('loopline_step_start_batch_starts_count')).toBeLessThan(6);
  });
});
