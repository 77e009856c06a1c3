import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSessions, makeSessionWithTenant, makeStepStart } from '../../testkit/src/index.ts';
import {
  acquireFence,
  type Db,
  type Fence,
  getSession,
  listSteps,
  loadHistory,
  StaleFenceError,
  setSessionStatus,
  startAssistantStep,
  startAssistantSteps,
} from '../src/index.ts';

// Several sessions' step starts in one statement (the worker's group commit): per start the
// outcome of startAssistantStep, the fence of each checked on its own, a stale one writing nothing.

const start = makeStepStart;

async function fenced(db: Db, tenantId: string, ids: string[]): Promise<Fence[]> {
  const out: Fence[] = [];
  for (const sessionId of ids)
    out.push({ tenantId, sessionId, fence: await acquireFence(db, tenantId, sessionId) });
  return out;
}

/** What a start left behind, without ids and times that differ between two runs. */
async function written(db: Db, f: Fence) {
  const session = await getSession(db, f.tenantId, f.sessionId);
  const history = await loadHistory(db, f.tenantId, f.sessionId);
  const steps = await listSteps(db, f.tenantId, f.sessionId);
  return {
    session: {
      status: session!.status,
      statusDetail: session!.statusDetail,
      stepCount: session!.stepCount,
      lastSeq: session!.lastSeq,
    },
    messages: history.map((m) => ({
      seq: m.info.seq,
      role: m.info.role,
      step: m.info.role === 'assistant' ? m.info.step : undefined,
      parts: m.parts.map((p) => (p.type === 'text' ? p.text : p.type)),
    })),
    steps: steps.map((s) => ({ step: s.step, fence: s.fence, attempt: s.attempt, estimate: s.estimate })),
  };
}

describe('startAssistantSteps', () => {
  test('each start as the single statement writes it: seq, step count, status, parts in order, ledger row', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 6);
    // Three sessions started one by one, three in one statement, with the same inputs.
    for (const id of ids) await setSessionStatus(pg.db, tenantId, id, 'queued', 'woken', null);
    const fences = await fenced(pg.db, tenantId, ids);
    const shapes = [
      { status: 'running' as const, parts: 3 },
      { parts: 1 },
      { status: 'running' as const, parts: 2 },
    ];
    for (const [i, shape] of shapes.entries()) {
      const s = start(fences[i]!, 1, shape);
      await startAssistantStep(pg.db, s.fence, s.input);
    }
    const batch = shapes.map((shape, i) => start(fences[i + 3]!, 1, shape));
    const results = await startAssistantSteps(pg.db, batch);
    for (const [i, r] of results.entries()) {
      expect(r).toHaveProperty('value');
      expect((r as { value: { id: string; seq: number } }).value).toMatchObject({
        id: batch[i]!.input.messageId,
        seq: 1,
      });
    }
    for (let i = 0; i < 3; i++)
      expect(await written(pg.db, fences[i + 3]!)).toEqual(await written(pg.db, fences[i]!));
    // The status was set where asked (detail cleared), kept where not.
    expect((await written(pg.db, fences[3]!)).session).toMatchObject({
      status: 'running',
      statusDetail: null,
    });
    expect((await written(pg.db, fences[4]!)).session).toMatchObject({
      status: 'queued',
      statusDetail: 'woken',
    });
  });

  test('a stale fence fails its start alone and writes nothing; the others commit', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 3);
    const fences = await fenced(pg.db, tenantId, ids);
    const newer = await acquireFence(pg.db, tenantId, ids[1]!);
    const results = await startAssistantSteps(
      pg.db,
      fences.map((f) => start(f, 1)),
    );
    expect(results[0]).toHaveProperty('value');
    expect(results[2]).toHaveProperty('value');
    const stale = (results[1] as { error: unknown }).error;
    expect(stale).toBeInstanceOf(StaleFenceError);
    expect((stale as StaleFenceError).data).toMatchObject({ fence: fences[1]!.fence, currentFence: newer });
    expect(await written(pg.db, fences[1]!)).toMatchObject({
      messages: [],
      steps: [],
      session: { stepCount: 0 },
    });
    expect((await written(pg.db, fences[0]!)).messages).toHaveLength(1);
  });

  test("another tenant's session is refused for that start only (its fence never matches)", async ({
    pg,
  }) => {
    const mine = await makeSessions(pg.db, 1);
    const other = await makeSessionWithTenant(pg.db);
    const [own] = await fenced(pg.db, mine.tenantId, mine.ids);
    const theirFence = await acquireFence(pg.db, other.tenant.id, other.session.id);
    // The other tenant's session id and current fence, claimed under this tenant.
    const forged: Fence = { tenantId: mine.tenantId, sessionId: other.session.id, fence: theirFence };
    const results = await startAssistantSteps(pg.db, [start(own!, 1), start(forged, 1)]);
    expect(results[0]).toHaveProperty('value');
    expect(results[1]).toHaveProperty('error');
    expect(await loadHistory(pg.db, other.tenant.id, other.session.id)).toEqual([]);
    expect((await getSession(pg.db, other.tenant.id, other.session.id))!.stepCount).toBe(0);
  });

  test('a batch holds one start per session; a refused statement writes nothing at all', async ({ pg }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 2);
    const fences = await fenced(pg.db, tenantId, ids);
    await expect(startAssistantSteps(pg.db, [start(fences[0]!, 1), start(fences[0]!, 2)])).rejects.toThrow(
      /one start per session/,
    );
    // Two starts whose parts share an id: the parts insert violates the primary key, so PostgreSQL
    // rolls the whole statement back, the other start included.
    const a = start(fences[0]!, 1);
    const b = start(fences[1]!, 1);
    b.input.parts = [{ ...b.input.parts[0]!, id: a.input.parts[0]!.id }];
    await expect(startAssistantSteps(pg.db, [a, b])).rejects.toMatchObject({ code: '23505' });
    for (const f of fences)
      expect(await written(pg.db, f)).toMatchObject({
        messages: [],
        steps: [],
        session: { stepCount: 0, lastSeq: 0 },
      });
  });
});
