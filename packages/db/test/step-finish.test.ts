import { newId } from '@loopline/core';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import {
  makeSessions,
  makeSessionWithTenant,
  makeStartedSteps,
  makeStepFinish,
  makeUsage,
} from '../../testkit/src/index.ts';
import {
  acquireFence,
  type Db,
  type Fence,
  finishModelStep,
  finishModelSteps,
  getSession,
  listSteps,
  loadHistory,
  StaleFenceError,
} from '../src/index.ts';

// Several sessions' step finishes in one statement (the worker's group commit, D44): per finish the
// outcome of finishModelStep, each behind its own fence check, a stale one writing nothing.

const usage = makeUsage;

const finishOf = (s: Awaited<ReturnType<typeof makeStartedSteps>>[number], n: number, learned = true) =>
  makeStepFinish(s.start, s.message, n, { learned });

/** What a finish left behind, without ids that differ between two sessions. */
async function written(db: Db, f: Fence) {
  const session = (await getSession(db, f.tenantId, f.sessionId))!;
  const history = await loadHistory(db, f.tenantId, f.sessionId);
  const steps = await listSteps(db, f.tenantId, f.sessionId);
  return {
    session: {
      lastSeq: session.lastSeq,
      tokenRatio: session.tokenRatio,
      tokenRatioWeight: session.tokenRatioWeight,
      lastUsage: session.lastUsage,
    },
    messages: history.map((m) => ({
      finish: m.info.role === 'assistant' ? m.info.finish : undefined,
      usage: m.info.role === 'assistant' ? m.info.usage : undefined,
      parts: m.parts.map((p) => (p.type === 'text' ? p.text : p.type === 'tool' ? p.state.status : p.type)),
    })),
    steps: steps.map((s) => ({
      outcome: s.outcome,
      usage: s.usage,
      responseId: s.responseId,
      finished: s.finishedAt !== null,
    })),
  };
}

describe('finishModelSteps', () => {
  test('each finish as the single statement writes it: session progress, parts in order, message, ledger row', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 6);
    const steps = await makeStartedSteps(pg.db, tenantId, ids);
    // Three sessions finished one by one, three in one statement, with the same inputs (the second
    // of each without a learned ratio: the stored one stays).
    for (let i = 0; i < 3; i++) {
      const f = finishOf(steps[i]!, i, i !== 1);
      await finishModelStep(pg.db, f.fence, f.input);
    }
    const results = await finishModelSteps(
      pg.db,
      [3, 4, 5].map((i) => finishOf(steps[i]!, i - 3, i !== 4)),
    );
    for (const r of results) expect(r).toEqual({ value: 1 });
    for (let i = 0; i < 3; i++) {
      const single = await written(pg.db, steps[i]!.fence);
      expect(await written(pg.db, steps[i + 3]!.fence)).toEqual(single);
    }
    const first = await written(pg.db, steps[3]!.fence);
    expect(first.messages[0]).toMatchObject({
      finish: 'tool-calls',
      parts: ['step-start', 'grown 0', 'completed', 'step-finish'],
    });
    expect(first.steps).toEqual([
      { outcome: 'tool-calls', usage: usage(100), responseId: 'resp_0', finished: true },
    ]);
    expect(first.session).toMatchObject({ tokenRatio: 1.1, tokenRatioWeight: 500 });
    expect((await written(pg.db, steps[4]!.fence)).session).toMatchObject({ tokenRatio: null });
  });

  test('a stale fence fails its finish alone and writes nothing; the others commit', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 3);
    const steps = await makeStartedSteps(pg.db, tenantId, ids);
    const newer = await acquireFence(pg.db, tenantId, ids[1]!);
    const before = await written(pg.db, steps[1]!.fence);
    const results = await finishModelSteps(
      pg.db,
      steps.map((s, i) => finishOf(s, i)),
    );
    expect(results[0]).toHaveProperty('value');
    expect(results[2]).toHaveProperty('value');
    const stale = (results[1] as { error: unknown }).error;
    expect(stale).toBeInstanceOf(StaleFenceError);
    expect((stale as StaleFenceError).data).toMatchObject({
      fence: steps[1]!.fence.fence,
      currentFence: newer,
    });
    expect(await written(pg.db, steps[1]!.fence)).toEqual(before);
    expect((await written(pg.db, steps[0]!.fence)).steps[0]!.finished).toBe(true);
  });

  test("another tenant's session is refused for that finish only (its fence never matches)", async ({
    pg,
  }) => {
    const mine = await makeSessions(pg.db, 1);
    const other = await makeSessionWithTenant(pg.db);
    const [own] = await makeStartedSteps(pg.db, mine.tenantId, mine.ids);
    const [theirs] = await makeStartedSteps(pg.db, other.tenant.id, [other.session.id]);
    const before = await written(pg.db, theirs!.fence);
    // The other tenant's session, message and current fence, claimed under this tenant.
    const forged = finishOf(theirs!, 1);
    forged.fence = { ...theirs!.fence, tenantId: mine.tenantId };
    const results = await finishModelSteps(pg.db, [finishOf(own!, 0), forged]);
    expect(results[0]).toHaveProperty('value');
    expect(results[1]).toHaveProperty('error');
    expect(await written(pg.db, theirs!.fence)).toEqual(before);
  });

  test('a finish whose rows are missing fails the whole statement, which writes nothing', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 2);
    const steps = await makeStartedSteps(pg.db, tenantId, ids);
    const before = await Promise.all(steps.map((s) => written(pg.db, s.fence)));
    const good = finishOf(steps[0]!, 0);
    const bad = finishOf(steps[1]!, 1);
    // An update of a part that was never written: a bug the statement refuses, as the single one does.
    bad.input.updates = [{ ...bad.input.updates[0]!, id: newId('prt') }];
    await expect(finishModelSteps(pg.db, [good, bad])).rejects.toThrow(/a row it writes is missing/);
    await expect(finishModelStep(pg.db, bad.fence, bad.input)).rejects.toThrow(/a row it writes is missing/);
    for (const [i, s] of steps.entries()) expect(await written(pg.db, s.fence)).toEqual(before[i]);
    // One finish per session, and at least the step-finish to insert.
    await expect(finishModelSteps(pg.db, [good, finishOf(steps[0]!, 2)])).rejects.toThrow(
      /one finish per session/,
    );
    await expect(finishModelStep(pg.db, good.fence, { ...good.input, inserts: [] })).rejects.toThrow(
      /at least its step-finish/,
    );
  });
  test('text PostgreSQL cannot store (NUL, an unpaired surrogate) is written as U+FFFD, alone and batched', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 2);
    const steps = await makeStartedSteps(pg.db, tenantId, ids);
    const bad = (i: number) => {
      const f = finishOf(steps[i]!, i);
      const [text] = f.input.updates;
      f.input.updates = [{ ...text!, text: 'a\u0000b\ud800' } as typeof text & {}];
      return f;
    };
    const alone = bad(0);
    await finishModelStep(pg.db, alone.fence, alone.input);
    expect(await finishModelSteps(pg.db, [bad(1)])).toEqual([{ value: 1 }]);
    for (const s of steps)
      expect((await written(pg.db, s.fence)).messages[0]!.parts[1]).toBe('a\uFFFDb\uFFFD');
  });
});
