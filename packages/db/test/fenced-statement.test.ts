import type { Part } from '@loopline/core';
import { newId } from '@loopline/core';
import { sql } from 'kysely';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSessionWithTenant } from '../../testkit/src/index.ts';
import {
  acquireFence,
  fencedStatement,
  finishStepCte,
  getSession,
  insertPartsCte,
  listSteps,
  loadHistory,
  StaleFenceError,
  startAssistantStep,
  updateAssistantInfoCte,
  updatePartsCte,
} from '../src/index.ts';

// One-statement fenced writes (the step's hot path): the fence check is the statement's first
// CTE; a stale fence writes nothing, and a write that misses its row fails the whole statement.

describe('one-statement fenced writes', () => {
  test('a step opened, written and finished in three statements; a stale fence writes nothing', async ({
    pg,
  }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const f = {
      tenantId: tenant.id,
      sessionId: session.id,
      fence: await acquireFence(pg.db, tenant.id, session.id),
    };
    const messageId = newId('msg');
    const stepStart: Part = {
      id: newId('prt'),
      sessionId: session.id,
      messageId,
      tokens: 0,
      type: 'step-start',
    };
    const stepId = newId('stp');
    const msg = await startAssistantStep(pg.db, f, {
      messageId,
      parentId: 'msg_parent',
      model: 'compatible/mock',
      agent: 'build',
      step: 1,
      now: 1000,
      parts: [stepStart],
      status: 'running',
      stepRow: { id: stepId, jobId: 'job-1', attempt: 1 },
    });
    expect(msg.seq).toBe(1);
    const row = await getSession(pg.db, tenant.id, session.id);
    expect(row).toMatchObject({ status: 'running', stepCount: 1 });

    const text: Part = {
      id: newId('prt'),
      sessionId: session.id,
      messageId,
      tokens: 2,
      type: 'text',
      text: 'hi',
    };
    await fencedStatement(pg.db, f, {}, [insertPartsCte(tenant.id, [text])]);
    const finished = { ...msg, finish: 'stop' as const, time: { created: 1000, completed: 2000 } };
    await fencedStatement(pg.db, f, { tokenRatio: 1.5 }, [
      updatePartsCte(tenant.id, [{ ...text, text: 'hi there', tokens: 3 } as Part]),
      updateAssistantInfoCte(tenant.id, finished),
      finishStepCte(tenant.id, stepId, { outcome: 'stop' }),
    ]);
    const history = await loadHistory(pg.db, tenant.id, session.id);
    expect(history).toHaveLength(1);
    expect(history[0]!.info).toMatchObject({ id: messageId, seq: 1, finish: 'stop' });
    expect(history[0]!.parts.map((p) => (p.type === 'text' ? p.text : p.type))).toEqual([
      'step-start',
      'hi there',
    ]);
    expect((await listSteps(pg.db, tenant.id, session.id))[0]).toMatchObject({ id: stepId, outcome: 'stop' });
    expect((await getSession(pg.db, tenant.id, session.id))!.tokenRatio).toBe(1.5);

    // A newer runner: every one-statement write of the old fence is refused and writes nothing.
    const newer = await acquireFence(pg.db, tenant.id, session.id);
    const stale = await startAssistantStep(pg.db, f, {
      messageId: newId('msg'),
      parentId: messageId,
      model: 'compatible/mock',
      agent: 'build',
      step: 2,
      now: 3000,
      parts: [],
      stepRow: { id: newId('stp'), jobId: 'job-2', attempt: 1 },
    }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(StaleFenceError);
    expect((stale as StaleFenceError).data).toMatchObject({ fence: f.fence, currentFence: newer });
    const late: Part = {
      id: newId('prt'),
      sessionId: session.id,
      messageId,
      tokens: 1,
      type: 'text',
      text: 'late',
    };
    await expect(
      fencedStatement(pg.db, f, { tokenRatio: 9 }, [insertPartsCte(tenant.id, [late])]),
    ).rejects.toBeInstanceOf(StaleFenceError);
    const after = await loadHistory(pg.db, tenant.id, session.id);
    expect(after).toHaveLength(1);
    expect(after[0]!.parts).toHaveLength(2);
    const s = (await getSession(pg.db, tenant.id, session.id))!;
    expect(s).toMatchObject({ stepCount: 1, tokenRatio: 1.5 });
    expect((await listSteps(pg.db, tenant.id, session.id)).length).toBe(1);
  });

  test('a write that misses its row fails the whole statement', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const f = {
      tenantId: tenant.id,
      sessionId: session.id,
      fence: await acquireFence(pg.db, tenant.id, session.id),
    };
    const before = (await getSession(pg.db, tenant.id, session.id))!;
    await expect(
      fencedStatement(pg.db, f, { tokenRatio: 2 }, [
        finishStepCte(tenant.id, 'stp_missing', { outcome: 'stop' }),
      ]),
    ).rejects.toThrow(/a row it writes is missing/);
    const { rows } = await sql<{
      token_ratio: number | null;
    }>`select token_ratio from sessions where id = ${session.id}`.execute(pg.db);
    expect(rows[0]!.token_ratio).toBe(before.tokenRatio ?? null);
  });
});
