import { sql } from 'kysely';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSession, makeSessionWithTenant } from '../../testkit/src/index.ts';
import { acquireFence, listStalledSessions, setSessionStatus } from '../src/index.ts';

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
