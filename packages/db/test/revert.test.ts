import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { lockWaiters, makeSessionWithTenant, until } from '../../testkit/src/index.ts';
import {
  appendUserMessage,
  type Db,
  getSession,
  lockSession,
  markReverted,
  revertedMessageIds,
  transitionSessionStatus,
} from '../src/index.ts';

// What a revert needs from the database besides markReverted: the session row lock that keeps
// appends and status changes out until commit, and which compaction messages a revert hid.

async function userText(db: Db, tenantId: string, sessionId: string, text: string) {
  return appendUserMessage(db, {
    tenantId,
    sessionId,
    agent: 'build',
    parts: [{ type: 'text', text, tokens: 1 }],
  });
}

describe('lockSession', () => {
  test('returns the row, scoped to the tenant', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const other = await makeSessionWithTenant(pg.db);
    await pg.db.transaction().execute(async (trx) => {
      expect((await lockSession(trx, tenant.id, session.id))?.id).toBe(session.id);
      expect(await lockSession(trx, other.tenant.id, session.id)).toBeUndefined();
      expect(await lockSession(trx, tenant.id, 'ses_missing')).toBeUndefined();
    });
  });

  test('holds appends and status changes until the transaction ends', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const tx = pg.db.transaction().execute(async (trx) => {
      await lockSession(trx, tenant.id, session.id);
      locked();
      await held;
      order.push('revert committed');
    });
    await isLocked;
    const append = userText(pg.db, tenant.id, session.id, 'late').then(() => order.push('append'));
    const status = transitionSessionStatus(pg.db, tenant.id, session.id, ['idle'], 'queued').then(() =>
      order.push('status'),
    );
    await until(
      'append and status parked on the session row lock',
      async () => (await lockWaiters(pg.db)) === 2,
    );
    expect(order).toEqual([]);
    release();
    await Promise.all([tx, append, status]);
    expect(order[0]).toBe('revert committed');
    expect((await getSession(pg.db, tenant.id, session.id))?.status).toBe('queued');
  });
});

describe('revertedMessageIds', () => {
  test('names the reverted ones among the given ids, in this tenant and session only', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const other = await makeSessionWithTenant(pg.db);
    const a = await userText(pg.db, tenant.id, session.id, 'a');
    const b = await userText(pg.db, tenant.id, session.id, 'b');
    const c = await userText(pg.db, tenant.id, session.id, 'c');
    await pg.db.transaction().execute((trx) => markReverted(trx, tenant.id, session.id, b.info.seq));
    const ids = [a.info.id, b.info.id, c.info.id, 'msg_missing'];
    expect(await revertedMessageIds(pg.db, tenant.id, session.id, ids)).toEqual(
      new Set([b.info.id, c.info.id]),
    );
    expect(await revertedMessageIds(pg.db, other.tenant.id, session.id, ids)).toEqual(new Set());
    expect(await revertedMessageIds(pg.db, tenant.id, session.id, [])).toEqual(new Set());
  });
});
