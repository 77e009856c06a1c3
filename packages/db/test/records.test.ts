import { sql } from 'kysely';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSessionWithTenant } from '../../testkit/src/index.ts';
import {
  appendUserMessage,
  compactionSummaryOf,
  countLines,
  findIdempotentResponse,
  finishCompaction,
  finishStep,
  getSession,
  listCompactions,
  listSteps,
  readToolOutput,
  saveIdempotentResponse,
  saveToolOutput,
  startCompaction,
  startStep,
  updateSessionProgress,
} from '../src/index.ts';

// Side records: idempotency keys, tool outputs with retention, the step ledger, compactions.

describe('idempotency keys', () => {
  test('save then find; a second save of the key reports the conflict', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const key = { tenantId: tenant.id, sessionId: session.id, key: 'req-1' };
    expect(await findIdempotentResponse(pg.db, tenant.id, session.id, 'req-1')).toBeUndefined();
    const response = { messageId: 'msg_1', parts: [1, 2, 3] };
    expect(
      await pg.db
        .transaction()
        .execute((trx) => saveIdempotentResponse(trx, { ...key, requestHash: 'h1', response })),
    ).toBe(true);
    expect(
      await pg.db
        .transaction()
        .execute((trx) =>
          saveIdempotentResponse(trx, { ...key, requestHash: 'h2', response: { other: true } }),
        ),
    ).toBe(false);
    expect(await findIdempotentResponse(pg.db, tenant.id, session.id, 'req-1')).toEqual({
      requestHash: 'h1',
      response,
    });
  });
});

describe('tool outputs', () => {
  test('stored with lines and bytes; expired outputs read as absent', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const content = 'héllo\nworld\n';
    const base = { tenantId: tenant.id, sessionId: session.id, partId: 'prt_1', callId: 'call_1', content };
    await pg.db.transaction().execute(async (trx) => {
      await saveToolOutput(trx, { ...base, id: 'out_kept', retentionDays: 30 });
      await saveToolOutput(trx, { ...base, id: 'out_kept', content: 'replayed', retentionDays: 30 }); // no-op
      await saveToolOutput(trx, { ...base, id: 'out_old', retentionDays: 1 });
      await saveToolOutput(trx, { ...base, id: 'out_zero', retentionDays: 0 });
    });
    expect(await readToolOutput(pg.db, tenant.id, session.id, 'out_kept')).toEqual({
      content,
      lines: 2,
      bytes: 13,
    });
    expect(await readToolOutput(pg.db, tenant.id, session.id, 'out_zero')).toBeUndefined();
    expect(await readToolOutput(pg.db, tenant.id, session.id, 'out_old')).toBeDefined();
    await sql`update tool_outputs set expires_at = now() - interval '1 second' where id = 'out_old'`.execute(
      pg.db,
    );
    expect(await readToolOutput(pg.db, tenant.id, session.id, 'out_old')).toBeUndefined();
    expect(await readToolOutput(pg.db, tenant.id, 'ses_other', 'out_kept')).toBeUndefined();
  });

  test('countLines', () => {
    expect([
      countLines(''),
      countLines('a'),
      countLines('a\n'),
      countLines('a\nb'),
      countLines('\n\n'),
    ]).toEqual([0, 1, 1, 2, 2]);
  });
});

describe('step ledger', () => {
  test('start is idempotent, finish records outcome and usage', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const start = {
      id: 'stp_1_a1',
      tenantId: tenant.id,
      sessionId: session.id,
      step: 1,
      kind: 'step' as const,
      jobId: 'step-x-1',
      attempt: 1,
      fence: 3,
    };
    const usage = { input: 100, output: 20, reasoning: 0, cache: { read: 50, write: 0 }, total: 170 };
    await pg.db.transaction().execute(async (trx) => {
      await startStep(trx, start);
      await startStep(trx, start);
      await startStep(trx, { ...start, id: 'stp_2_a1', step: 2 });
    });
    await pg.db.transaction().execute((trx) =>
      finishStep(trx, tenant.id, 'stp_1_a1', {
        outcome: 'tool-calls',
        usage,
        requestId: 'req_1',
        messageId: 'msg_a',
      }),
    );
    const steps = await listSteps(pg.db, tenant.id, session.id);
    expect(steps.map((s) => [s.id, s.outcome])).toEqual([
      ['stp_1_a1', 'tool-calls'],
      ['stp_2_a1', null],
    ]);
    expect(steps[0]).toMatchObject({ usage, requestId: 'req_1', messageId: 'msg_a', fence: 3, kind: 'step' });
    expect(steps[0]?.durationMs).toBeGreaterThanOrEqual(0);
    expect(steps[1]).toMatchObject({ finishedAt: null, durationMs: null, usage: null });
    // The newest only, in the same order.
    expect((await listSteps(pg.db, tenant.id, session.id, { newest: 1 })).map((s) => s.id)).toEqual([
      'stp_2_a1',
    ]);
  });
});

describe('compactions', () => {
  test('a run records why, rung, tokens and duration; a retry closes the stale run', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const point = await appendUserMessage(pg.db, {
      tenantId: tenant.id,
      sessionId: session.id,
      agent: 'build',
      synthetic: true,
      parts: [{ type: 'compaction', auto: true, overflow: false, tokens: 0 }],
    });
    const base = {
      tenantId: tenant.id,
      sessionId: session.id,
      messageId: point.info.id,
      partId: point.parts[0]!.id,
      reason: 'auto' as const,
      model: 'compatible/mock',
    };
    await pg.db.transaction().execute((trx) =>
      startCompaction(trx, {
        ...base,
        id: 'cmp_a1',
        tokensBefore: 120_000,
        jobId: 'compact-1',
        attempt: 1,
      }),
    );
    // The first worker died; the retry starts another run of the same point.
    await pg.db.transaction().execute(async (trx) => {
      await startCompaction(trx, {
        ...base,
        id: 'cmp_a2',
        tokensBefore: 120_000,
        jobId: 'compact-1',
        attempt: 2,
      });
      await startCompaction(trx, { ...base, id: 'cmp_a2', tokensBefore: 1, jobId: 'compact-1', attempt: 2 }); // replay
    });
    const done = await pg.db.transaction().execute(async (trx) => {
      const closed = await finishCompaction(trx, tenant.id, 'cmp_a2', {
        status: 'completed',
        rung: 'summary',
        summaryMessageId: 'msg_summary',
        tokensAfter: 9_000,
        headMessages: 40,
        tailStartId: 'msg_tail',
      });
      await updateSessionProgress(trx, tenant.id, session.id, {
        compactionCount: 1,
        lastCompactionAt: new Date('2026-01-01T00:00:00Z'),
        boundarySeq: point.info.seq,
      });
      return closed;
    });
    expect(done).toBe(true);
    expect(
      await pg.db
        .transaction()
        .execute((trx) => finishCompaction(trx, tenant.id, 'cmp_a2', { status: 'failed' })),
    ).toBe(false);

    const runs = await listCompactions(pg.db, tenant.id, session.id);
    expect(runs.map((r) => [r.id, r.status, r.attempt])).toEqual([
      ['cmp_a1', 'failed', 1],
      ['cmp_a2', 'completed', 2],
    ]);
    expect((await listCompactions(pg.db, tenant.id, session.id, { newest: 1 })).map((r) => r.id)).toEqual([
      'cmp_a2',
    ]);
    // What the session view says, counted by PostgreSQL; a reverted compaction point takes its runs out.
    const summary = await compactionSummaryOf(pg.db, tenant.id, session.id);
    expect(summary).toMatchObject({ completed: 1, last: { id: 'cmp_a2', status: 'completed' } });
    expect(summary.lastAt).toBeInstanceOf(Date);
    await pg.db.updateTable('messages').set({ reverted: true }).where('id', '=', point.info.id).execute();
    expect(await compactionSummaryOf(pg.db, tenant.id, session.id)).toEqual({
      completed: 0,
      lastAt: null,
      last: null,
    });
    await pg.db.updateTable('messages').set({ reverted: false }).where('id', '=', point.info.id).execute();
    expect(runs[0]?.error?.name).toBe('StepInterruptedError');
    expect(runs[1]).toMatchObject({
      reason: 'auto',
      rung: 'summary',
      tokensBefore: 120_000,
      tokensAfter: 9_000,
      headMessages: 40,
      tailStartId: 'msg_tail',
      summaryMessageId: 'msg_summary',
      model: 'compatible/mock',
      error: null,
    });
    expect(runs[1]?.durationMs).toBeGreaterThanOrEqual(0);
    expect(await getSession(pg.db, tenant.id, session.id)).toMatchObject({
      compactionCount: 1,
      lastCompactionAt: new Date('2026-01-01T00:00:00Z'),
      boundarySeq: point.info.seq,
    });
  });

  test('session progress stores the last usage and the learned ratio', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const usage = { input: 1, output: 2, reasoning: 0, cache: { read: 0, write: 0 }, total: 3 };
    await pg.db.transaction().execute((trx) =>
      updateSessionProgress(trx, tenant.id, session.id, {
        lastUsage: { usage, messageSeq: 7 },
        tokenRatio: 1.07,
        stepCount: 4,
        title: 'Refactor',
      }),
    );
    expect(await getSession(pg.db, tenant.id, session.id)).toMatchObject({
      lastUsage: { usage, messageSeq: 7 },
      tokenRatio: 1.07,
      stepCount: 4,
      title: 'Refactor',
    });
    await pg.db
      .transaction()
      .execute((trx) => updateSessionProgress(trx, tenant.id, session.id, { lastUsage: null, title: null }));
    expect(await getSession(pg.db, tenant.id, session.id)).toMatchObject({
      lastUsage: null,
      title: null,
      stepCount: 4,
    });
  });
});
