import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSession, makeTenant } from '../../testkit/src/index.ts';
import { getSessionAnyTenant, listSessionsAllTenants, setSessionStatus } from '../src/index.ts';

// Operator reads across tenants (the session inspector): every tenant's sessions, newest update
// first, with the tenant's name; filters by tenant and status; a bounded limit.

describe('operator session reads', () => {
  test('list every tenant, newest update first, filtered by tenant and status', async ({ pg }) => {
    const a = await makeTenant(pg.db, 'alpha');
    const b = await makeTenant(pg.db, 'beta');
    const a1 = await makeSession(pg.db, a.tenant.id);
    const b1 = await makeSession(pg.db, b.tenant.id);
    const a2 = await makeSession(pg.db, a.tenant.id);
    // a1 updated last: it comes first.
    await setSessionStatus(pg.db, a.tenant.id, a1.id, 'error');

    const all = await listSessionsAllTenants(pg.db, { limit: 500 });
    const ours = all.filter((s) => [a1.id, a2.id, b1.id].includes(s.id));
    expect(ours.map((s) => s.id)).toEqual([a1.id, a2.id, b1.id]);
    expect(ours.map((s) => s.tenantName)).toEqual(['alpha', 'alpha', 'beta']);
    expect(ours[0]).toMatchObject({ tenantId: a.tenant.id, status: 'error' });

    const onlyB = await listSessionsAllTenants(pg.db, { tenantId: b.tenant.id });
    expect(onlyB.map((s) => s.id)).toEqual([b1.id]);
    const errors = await listSessionsAllTenants(pg.db, { tenantId: a.tenant.id, status: 'error' });
    expect(errors.map((s) => s.id)).toEqual([a1.id]);
    expect(await listSessionsAllTenants(pg.db, { tenantId: 'ten_missing' })).toEqual([]);
  });

  test('limit is clamped to 1..500', async ({ pg }) => {
    const t = await makeTenant(pg.db);
    for (let i = 0; i < 3; i++) await makeSession(pg.db, t.tenant.id);
    expect(await listSessionsAllTenants(pg.db, { tenantId: t.tenant.id, limit: 2 })).toHaveLength(2);
    expect(await listSessionsAllTenants(pg.db, { tenantId: t.tenant.id, limit: 0 })).toHaveLength(1);
    expect(await listSessionsAllTenants(pg.db, { tenantId: t.tenant.id, limit: 10_000 })).toHaveLength(3);
  });

  test('a session by id whatever its tenant', async ({ pg }) => {
    const t = await makeTenant(pg.db, 'gamma');
    const s = await makeSession(pg.db, t.tenant.id);
    expect(await getSessionAnyTenant(pg.db, s.id)).toMatchObject({
      id: s.id,
      tenantId: t.tenant.id,
      tenantName: 'gamma',
      agentName: s.agentName,
    });
    expect(await getSessionAnyTenant(pg.db, 'ses_missing')).toBeUndefined();
  });
});
