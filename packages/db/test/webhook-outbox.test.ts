import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSessionWithTenant } from '../../testkit/src/index.ts';
import {
  acquireFence,
  fencedStatement,
  listStalePendingDeliveries,
  pendingDeliveriesOf,
  putWebhookSubscription,
  recordWebhookEvents,
  resetWebhookDelivery,
  StaleFenceError,
  webhookEventsCte,
  withFence,
} from '../src/index.ts';

// The webhook outbox: deliveries are recorded pending by the write that commits their event
// (a fenced transaction or a one-statement write), one per enabled subscription wanting the
// type, once per event id; a rolled-back or stale write records none.

const event = (id: string, type = 'session.idle') => ({ id, type, payload: { type, data: { n: 1 } } });

describe('webhook outbox', () => {
  test('recorded with the write, once per event and subscription; none when the write fails', async ({
    pg,
  }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const cfg = (eventTypes: string[], enabled = true) => ({
      url: 'https://example.test/h',
      eventTypes,
      enabled,
    });
    await putWebhookSubscription(pg.db, tenant.id, 'a', cfg(['session.idle']), 'sealed');
    await putWebhookSubscription(pg.db, tenant.id, 'b', cfg(['session.idle', 'session.error']), 'sealed');
    await putWebhookSubscription(pg.db, tenant.id, 'off', cfg(['session.idle'], false), 'sealed');
    await putWebhookSubscription(pg.db, tenant.id, 'other', cfg(['batch.completed']), 'sealed');
    const f = {
      tenantId: tenant.id,
      sessionId: session.id,
      fence: await acquireFence(pg.db, tenant.id, session.id),
    };

    const ids = await withFence(pg.db, f, (trx) => recordWebhookEvents(trx, tenant.id, [event('evt_1')]));
    expect(ids).toHaveLength(2); // a and b; not the disabled one, not the other type
    expect(await recordWebhookEvents(pg.db, tenant.id, [event('evt_1')])).toEqual([]); // same event: skipped
    const rows = await pg.db.selectFrom('webhook_deliveries').selectAll().orderBy('subscription').execute();
    expect(rows.map((r) => [r.subscription, r.status, r.event_id, r.job_id])).toEqual([
      ['a', 'pending', 'evt_1', null],
      ['b', 'pending', 'evt_1', null],
    ]);
    expect(rows[0]!.payload).toEqual({ id: 'evt_1', type: 'session.idle', data: { n: 1 } });
    expect(rows[0]!.id).toMatch(/^whd_[0-9a-f]{24}$/);

    // A transaction that rolls back records nothing.
    await expect(
      withFence(pg.db, f, async (trx) => {
        await recordWebhookEvents(trx, tenant.id, [event('evt_2')]);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await pendingDeliveriesOf(pg.db, tenant.id, ['evt_2'])).toEqual([]);

    // One statement: the CTE commits with the fence check; a stale fence records nothing.
    await fencedStatement(pg.db, f, {}, [webhookEventsCte(tenant.id, [event('evt_3', 'session.error')])]);
    const third = await pendingDeliveriesOf(pg.db, tenant.id, ['evt_3']);
    expect(third.map((d) => d.jobId)).toEqual(third.map((d) => d.id));
    expect(third).toHaveLength(1);
    await acquireFence(pg.db, tenant.id, session.id);
    await expect(
      fencedStatement(pg.db, f, {}, [webhookEventsCte(tenant.id, [event('evt_4')])]),
    ).rejects.toBeInstanceOf(StaleFenceError);
    expect(await pendingDeliveriesOf(pg.db, tenant.id, ['evt_4'])).toEqual([]);

    // The reconciler's list: pending ones untouched for the grace, with the job that carries them.
    const stale = await listStalePendingDeliveries(pg.db, { olderThanMs: 0 });
    expect(stale.map((d) => d.id).sort()).toEqual([...ids, third[0]!.id].sort());
    await resetWebhookDelivery(pg.db, tenant.id, ids[0]!, `${ids[0]}-r1`);
    const after = await listStalePendingDeliveries(pg.db, { olderThanMs: 0 });
    expect(after.find((d) => d.id === ids[0])?.jobId).toBe(`${ids[0]}-r1`);
    expect(await listStalePendingDeliveries(pg.db, { olderThanMs: 60_000 })).toEqual([]);
  });
});
