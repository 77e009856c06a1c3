import type { ToolPart } from '@loopline/core';
import { sql } from 'kysely';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSession, makeSessionWithTenant } from '../../testkit/src/index.ts';
import {
  acquireFence,
  appendUserMessage,
  createAssistantMessage,
  insertPart,
  listStalledSessions,
  listStalledWaitingSessions,
  recordAbortRequest,
  setSessionStatus,
} from '../src/index.ts';

// The reconciler's read: sessions with work due whose row has not changed for a while, across
// tenants (or one), the stalest first.

const age = (db: Parameters<typeof acquireFence>[0], id: string, seconds: number) =>
  db
    .updateTable('sessions')
    .set({ updated_at: sql<Date>`now() - make_interval(secs => ${seconds}::double precision)` })
    .where('id', '=', id)
    .execute();

describe('listStalledSessions', () => {
  test('finds active sessions untouched for idleForMs, of every tenant or one, stalest first', async ({
    pg,
  }) => {
    const a = await makeSessionWithTenant(pg.db);
    const b = await makeSessionWithTenant(pg.db);
    const running = a.session;
    const compacting = await makeSession(pg.db, a.tenant.id, { agent: a.agent });
    const queued = b.session;
    const idle = await makeSession(pg.db, b.tenant.id, { agent: b.agent });
    const fresh = await makeSession(pg.db, b.tenant.id, { agent: b.agent });
    await setSessionStatus(pg.db, a.tenant.id, running.id, 'running');
    await setSessionStatus(pg.db, a.tenant.id, compacting.id, 'compacting');
    await setSessionStatus(pg.db, b.tenant.id, queued.id, 'queued');
    await setSessionStatus(pg.db, b.tenant.id, fresh.id, 'queued');
    await acquireFence(pg.db, a.tenant.id, running.id);
    await age(pg.db, running.id, 120);
    await age(pg.db, compacting.id, 60);
    await age(pg.db, queued.id, 90);
    await age(pg.db, idle.id, 300);

    const statuses = ['queued', 'running', 'compacting'] as const;
    const all = await listStalledSessions(pg.db, { statuses, idleForMs: 30_000 });
    expect(all.map((s) => s.sessionId)).toEqual([running.id, queued.id, compacting.id]);
    expect(all[0]).toEqual({
      tenantId: a.tenant.id,
      sessionId: running.id,
      status: 'running',
      fence: 1,
      kind: 'interactive',
      boundarySeq: null,
      traceparent: null,
    });
    const ofB = await listStalledSessions(pg.db, { statuses, idleForMs: 30_000, tenantId: b.tenant.id });
    expect(ofB.map((s) => s.sessionId)).toEqual([queued.id]);
    expect(
      (await listStalledSessions(pg.db, { statuses, idleForMs: 100_000 })).map((s) => s.sessionId),
    ).toEqual([running.id]);
    expect(await listStalledSessions(pg.db, { statuses, idleForMs: 30_000, limit: 1 })).toHaveLength(1);
    expect(await listStalledSessions(pg.db, { statuses: [], idleForMs: 0 })).toEqual([]);
  });
});

describe('listStalledWaitingSessions', () => {
  test('lists waiting sessions a wake-up is due for, never those legitimately waiting', async ({ pg }) => {
    const { tenant, agent } = await makeSessionWithTenant(pg.db);
    /** A waiting session whose reply holds one running deferred call with `metadata`. */
    const waitingOn = async (metadata: Record<string, unknown>) => {
      const s = await makeSession(pg.db, tenant.id, { agent });
      const user = await appendUserMessage(pg.db, {
        tenantId: tenant.id,
        sessionId: s.id,
        agent: 'build',
        parts: [{ type: 'text', text: 'go', tokens: 1 }],
      });
      await pg.db.transaction().execute(async (trx) => {
        const msg = await createAssistantMessage(trx, {
          tenantId: tenant.id,
          sessionId: s.id,
          parentId: user.info.id,
          model: 'compatible/mock',
          agent: 'build',
        });
        const part: ToolPart = {
          id: `prt_${s.id}`,
          sessionId: s.id,
          messageId: msg.id,
          type: 'tool',
          callId: `call_${s.id}`,
          tool: 'pick',
          tokens: 1,
          state: { status: 'running', input: {}, metadata, time: { start: Date.now() } },
        };
        await insertPart(trx, tenant.id, part);
      });
      await setSessionStatus(pg.db, tenant.id, s.id, 'waiting');
      await age(pg.db, s.id, 60);
      return s.id;
    };
    const child = async (status: 'running' | 'idle') => {
      const c = await makeSession(pg.db, tenant.id, { agent });
      await setSessionStatus(pg.db, tenant.id, c.id, status);
      return c.id;
    };
    const timeout = await waitingOn({ awaiting: 'client', deadline: Date.now() + 60_000, timeoutMs: 60_000 });
    const forever = await waitingOn({ awaiting: 'client' });
    const childDone = await waitingOn({ awaiting: 'subagent', childSessionId: await child('idle') });
    const childBusy = await waitingOn({ awaiting: 'subagent', childSessionId: await child('running') });
    const aborted = await waitingOn({ awaiting: 'client' });
    await recordAbortRequest(pg.db, tenant.id, aborted);
    await age(pg.db, aborted, 60);
    const fresh = await waitingOn({ awaiting: 'client', deadline: Date.now() });
    await age(pg.db, fresh, 0);

    const listed = await listStalledWaitingSessions(pg.db, { idleForMs: 30_000 });
    expect(new Set(listed.map((s) => s.sessionId))).toEqual(new Set([timeout, childDone, aborted]));
    expect(listed.every((s) => s.status === 'waiting')).toBe(true);
    expect(listed.map((s) => s.sessionId)).not.toContain(forever);
    expect(listed.map((s) => s.sessionId)).not.toContain(childBusy);
    expect(listed.map((s) => s.sessionId)).not.toContain(fresh);
  });
});
