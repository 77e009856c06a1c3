import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSession, makeSessionWithTenant } from '../../testkit/src/index.ts';
import { listSessionPage, type SessionCursor, type SessionFilter, setSessionStatus } from '../src/index.ts';

// GET /v1/sessions' read: a filter on what the index does not hold (status, agent, metadata) reads
// at most scanMax sessions per page, so a filter matching nothing no longer walks the tenant's
// every session; a page may then end early with a cursor, and following the cursors finds every
// match once, newest first.

async function all(
  db: Parameters<typeof listSessionPage>[0],
  tenantId: string,
  filter: SessionFilter,
  opts: { limit: number; scanMax: number },
) {
  const pages: string[][] = [];
  let after: SessionCursor | undefined;
  do {
    const page = await listSessionPage(db, tenantId, filter, { ...opts, ...(after ? { after } : {}) });
    pages.push(page.sessions.map((s) => s.id));
    after = page.next;
  } while (after);
  return pages;
}

describe('listSessionPage', () => {
  test('a filtered page reads at most scanMax sessions; its cursors find every match once', async ({
    pg,
  }) => {
    const { tenant, agent, session: first } = await makeSessionWithTenant(pg.db);
    const ids = [first.id];
    for (let i = 1; i < 12; i++) {
      const s = await makeSession(pg.db, tenant.id, {
        agent,
        metadata: { user: i % 4 === 0 ? 'u-4' : 'u-x' },
      });
      ids.push(s.id);
    }
    await setSessionStatus(pg.db, tenant.id, ids[1]!, 'error');
    const newestFirst = [...ids].reverse();
    const matches = newestFirst.filter((_, i) => (11 - i) % 4 === 0 && 11 - i > 0);
    // 12 sessions, 5 read per page: the pages end where their reading stopped.
    const pages = await all(pg.db, tenant.id, { metadata: { user: 'u-4' } }, { limit: 2, scanMax: 5 });
    expect(pages.flat()).toEqual(matches);
    expect(pages.length).toBeGreaterThanOrEqual(3);
    for (const page of pages) expect(page.length).toBeLessThanOrEqual(2);
    // A filter that matches nothing: empty pages with cursors, then the end.
    const none = await all(pg.db, tenant.id, { metadata: { user: 'nobody' } }, { limit: 50, scanMax: 5 });
    expect(none).toEqual([[], [], []]);
    expect((await all(pg.db, tenant.id, { statuses: ['error'] }, { limit: 50, scanMax: 5 })).flat()).toEqual([
      ids[1],
    ]);
    // Unfiltered pages are full pages, as before.
    const plain = await all(pg.db, tenant.id, {}, { limit: 5, scanMax: 5 });
    expect(plain.map((p) => p.length)).toEqual([5, 5, 2]);
    expect(plain.flat()).toEqual(newestFirst);
  });
});
