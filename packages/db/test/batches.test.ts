import { AgentConfig } from '@loopline/core';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeTenant } from '../../testkit/src/index.ts';
import {
  BATCH_CANCELLED_DETAIL,
  batchCounts,
  cancelBatch,
  completeBatch,
  createBatch,
  type Db,
  finishBatchItem,
  getBatch,
  getBatchItemBySession,
  getSession,
  isBatchItemCancelled,
  listBatchItems,
  recordItemSent,
  setSessionStatus,
} from '../src/index.ts';

// Batches: one transaction for the batch, its sessions and items; counts by state; the posting
// counter's compare-and-set; cancel and completion.

const agent = AgentConfig.parse({ model: 'compatible/mock' });

async function batchOf(db: Db, tenantId: string, n: number) {
  return createBatch(db, {
    tenantId,
    agentName: 'helper',
    agent,
    conversations: Array.from({ length: n }, (_, i) => ({
      messages: [{ text: `q${i}` }, { text: `r${i}` }],
      metadata: { i },
    })),
  });
}

describe('batches', () => {
  test('creates batch sessions and items in input order, scoped by tenant', async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db);
    const other = await makeTenant(pg.db);
    const { batch, items } = await batchOf(pg.db, tenant.id, 3);
    expect(batch).toMatchObject({ tenantId: tenant.id, status: 'running', total: 3 });
    expect(items.map((i) => i.index)).toEqual([0, 1, 2]);
    const session = await getSession(pg.db, tenant.id, items[1]!.sessionId);
    expect(session).toMatchObject({ kind: 'batch', status: 'idle', metadata: { i: 1 }, agentName: 'helper' });
    expect(await getBatch(pg.db, other.tenant.id, batch.id)).toBeUndefined();
    expect(await getBatchItemBySession(pg.db, other.tenant.id, items[0]!.sessionId)).toBeUndefined();
    const listed = await listBatchItems(pg.db, tenant.id, batch.id, { afterIndex: 0, limit: 1 });
    expect(listed.map((i) => [i.index, i.state, i.metadata])).toEqual([[1, 'queued', { i: 1 }]]);
    expect(await batchCounts(pg.db, tenant.id, batch.id)).toEqual({
      queued: 3,
      running: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
    });
  });

  test('counts a message once: the sent counter is compare-and-set', async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db);
    const { batch } = await batchOf(pg.db, tenant.id, 1);
    const first = await pg.db.transaction().execute((trx) => recordItemSent(trx, batch.id, 0, 0));
    const again = await pg.db.transaction().execute((trx) => recordItemSent(trx, batch.id, 0, 0));
    expect([first, again]).toEqual([true, false]);
  });

  test('cancel stops queued sessions, leaves running ones to be aborted, and is idempotent', async ({
    pg,
  }) => {
    const { tenant } = await makeTenant(pg.db);
    const { batch, items } = await batchOf(pg.db, tenant.id, 4);
    const [done, running, queued] = items.map((i) => i.sessionId);
    await finishBatchItem(pg.db, batch.id, 0, { status: 'completed', result: null });
    await setSessionStatus(pg.db, tenant.id, running!, 'running');
    await setSessionStatus(pg.db, tenant.id, queued!, 'queued');
    expect(await batchCounts(pg.db, tenant.id, batch.id)).toMatchObject({
      completed: 1,
      running: 1,
      queued: 2,
    });

    const cancelled = await cancelBatch(pg.db, tenant.id, batch.id, BATCH_CANCELLED_DETAIL);
    expect(cancelled?.batch.status).toBe('cancelled');
    expect(cancelled?.cancelledSessionIds.sort()).toEqual(
      items
        .slice(1)
        .map((i) => i.sessionId)
        .sort(),
    );
    expect(cancelled?.stoppedSessionIds).toEqual([queued]);
    expect(cancelled?.runningSessionIds).toEqual([running]);
    expect(await getSession(pg.db, tenant.id, queued!)).toMatchObject({
      status: 'idle',
      statusDetail: BATCH_CANCELLED_DETAIL,
    });
    expect(await isBatchItemCancelled(pg.db, tenant.id, running!)).toBe(true);
    expect(await isBatchItemCancelled(pg.db, tenant.id, done!)).toBe(false);
    expect(await batchCounts(pg.db, tenant.id, batch.id)).toMatchObject({ completed: 1, cancelled: 3 });
    const again = await cancelBatch(pg.db, tenant.id, batch.id, BATCH_CANCELLED_DETAIL);
    expect(again?.cancelledSessionIds).toEqual([]);
    expect(await cancelBatch(pg.db, 'ten_other', batch.id, BATCH_CANCELLED_DETAIL)).toBeUndefined();
    // A finished item stays finished; completing a cancelled batch keeps it cancelled.
    expect(await finishBatchItem(pg.db, batch.id, 1, { status: 'completed' })).toBe(false);
    await completeBatch(pg.db, batch.id, { name: 'BatchItemError', message: 'x' });
    expect((await getBatch(pg.db, tenant.id, batch.id))?.status).toBe('cancelled');
  });

  test('completing a batch marks items whose job failed for good as failed', async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db);
    const { batch } = await batchOf(pg.db, tenant.id, 2);
    await finishBatchItem(pg.db, batch.id, 0, { status: 'completed', result: null });
    await completeBatch(pg.db, batch.id, { name: 'BatchItemError', message: 'the batch item job failed' });
    expect((await getBatch(pg.db, tenant.id, batch.id))?.status).toBe('completed');
    const items = await listBatchItems(pg.db, tenant.id, batch.id);
    expect(items.map((i) => [i.state, i.error?.name ?? null])).toEqual([
      ['completed', null],
      ['failed', 'BatchItemError'],
    ]);
  });
});
