import { acquireFence, listSteps, loadHistory, StaleFenceError } from '@loopline/db';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../../packages/testkit/src/fixtures.ts';
import { makeSessions, makeStartedSteps, makeStepFinish } from '../../../packages/testkit/src/index.ts';
import { createWorkerMetrics } from '../src/metrics.ts';
import { createStepFinishes, stepFinishesOf } from '../src/step/finish-batch.ts';

// The worker's group commit of step finishes on real PostgreSQL: finishes that would queue for a
// statement slot go in one statement together, each with its own fence check; a stale finish fails
// alone with StaleFenceError, and a finish whose rows are missing fails alone (the batch is
// refused, then each is written on its own).

describe('step-finish group commit', () => {
  test('queued finishes share a statement; each is fenced on its own; a broken one fails alone', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 12);
    const steps = await makeStartedSteps(pg.db, tenantId, ids);
    // Session 5 has a newer runner; session 7's finish updates a part that was never written.
    await acquireFence(pg.db, tenantId, ids[5]!);
    const finishes = steps.map((s, i) => makeStepFinish(s.start, s.message, i));
    const broken = finishes[7]!.input;
    broken.updates = [{ ...broken.updates[0]!, id: `${broken.updates[0]!.id}x` }];
    const sizes: number[] = [];
    const group = createStepFinishes(pg.db, { concurrency: 1, maxBatch: 64 }, (n) => sizes.push(n));
    const results = await Promise.allSettled(finishes.map((f) => group.submit(f)));
    expect(group.stats.largest).toBeGreaterThan(1);
    for (const [i, r] of results.entries()) {
      if (i === 5) {
        expect((r as PromiseRejectedResult).reason).toBeInstanceOf(StaleFenceError);
      } else if (i === 7) {
        expect(String((r as PromiseRejectedResult).reason)).toMatch(/a row it writes is missing/);
      } else {
        expect(r).toEqual({ status: 'fulfilled', value: 1 });
      }
    }
    for (const [i, sessionId] of ids.entries()) {
      const [message] = await loadHistory(pg.db, tenantId, sessionId);
      const [step] = await listSteps(pg.db, tenantId, sessionId);
      const done = i !== 5 && i !== 7;
      expect(message!.parts.map((p) => p.type)).toEqual(
        done ? ['step-start', 'text', 'tool', 'step-finish'] : ['step-start', 'text'],
      );
      expect(step!.outcome).toBe(done ? 'tool-calls' : null);
    }
  });

  test('batching off (maxBatch 1): every finish is its own statement', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 4);
    const steps = await makeStartedSteps(pg.db, tenantId, ids);
    const sizes: number[] = [];
    const group = createStepFinishes(pg.db, { concurrency: 1, maxBatch: 1 }, (n) => sizes.push(n));
    await Promise.all(steps.map((s, i) => group.submit(makeStepFinish(s.start, s.message, i))));
    expect(sizes).toEqual([1, 1, 1, 1]);
  });

  test("a worker's default group commit reports each statement's finishes in loopline_step_finish_batch_finishes", async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 6);
    const steps = await makeStartedSteps(pg.db, tenantId, ids);
    const metrics = createWorkerMetrics({ defaultMetrics: false });
    const deps = { db: pg.db, metrics };
    // The same group commit for every step of this deps object.
    expect(stepFinishesOf(deps)).toBe(stepFinishesOf(deps));
    await Promise.all(
      steps.map((s, i) => stepFinishesOf(deps).submit(makeStepFinish(s.start, s.message, i))),
    );
    const metric = (await metrics.registry.getMetricsAsJSON()).find(
      (m) => m.name === 'loopline_step_finish_batch_finishes',
    );
    const series = (metric?.values ?? []) as Array<{ metricName?: string; value: number }>;
    const read = (name: string) => series.find((v) => v.metricName === name)?.value;
    expect(read('loopline_step_finish_batch_finishes_sum')).toBe(6);
    // One statement at a time by default: the finishes that queued behind the first went together.
    expect(read('loopline_step_finish_batch_finishes_count')).toBeLessThan(6);
  });
});
