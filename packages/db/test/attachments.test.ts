import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSessionWithTenant } from '../../testkit/src/index.ts';
import { loadAttachmentsWithin, saveAttachment } from '../src/index.ts';

// Stored attachment bytes are read in one statement, and only when together they fit the budget the
// caller gives (the request's attachment budget): past it the total comes back without the bytes.

describe('loadAttachmentsWithin', () => {
  test('reads the bytes only within the budget, and only of this tenant', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const other = await makeSessionWithTenant(pg.db);
    const save = (tenantId: string, sessionId: string, partId: string, bytes: number) =>
      saveAttachment(pg.db, { tenantId, sessionId, partId, mime: 'image/png', data: Buffer.alloc(bytes, 1) });
    await save(tenant.id, session.id, 'prt_a', 100);
    await save(tenant.id, session.id, 'prt_b', 60);
    await save(other.tenant.id, other.session.id, 'prt_x', 500);

    const fits = await loadAttachmentsWithin(pg.db, tenant.id, ['prt_a', 'prt_b', 'prt_none'], 160);
    expect(fits.total).toBe(160);
    expect([...(fits.records?.keys() ?? [])].sort()).toEqual(['prt_a', 'prt_b']);
    expect(fits.records?.get('prt_a')?.data.length).toBe(100);

    const over = await loadAttachmentsWithin(pg.db, tenant.id, ['prt_a', 'prt_b'], 159);
    expect(over).toEqual({ total: 160 });

    // Another tenant's part id is not read, nor counted.
    const foreign = await loadAttachmentsWithin(pg.db, tenant.id, ['prt_a', 'prt_x'], 150);
    expect(foreign.total).toBe(100);
    expect([...(foreign.records?.keys() ?? [])]).toEqual(['prt_a']);
    expect(await loadAttachmentsWithin(pg.db, tenant.id, [], 0)).toEqual({ total: 0, records: new Map() });
  });
});
