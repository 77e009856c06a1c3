import type { SessionEvent } from '@loopline/core';
import { acquireFence, fencedStatement, setSessionStatus } from '@loopline/db';
import { acquireSlot, slotHolders } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionWriter } from '../../apps/worker/src/session-writer.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// The write layer's outbox (no workers run here, so jobs stay where they were added): webhook
// events commit with the write that carries them — in its transaction, or as a CTE of a
// one-statement write — and their jobs are added after the commit under the delivery id; a write
// that rolls back records nothing. The writer does nothing else: no slot, no batch item.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({ workers: false });
  client = await stack.tenant('writer');
  const res = await client.call('PUT', '/v1/webhooks/all', {
    url: 'http://127.0.0.1:9/hook',
    events: ['session.idle', 'session.error', 'session.waiting'],
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  await client.agent('plain', {});
});
afterAll(() => stack?.close());

async function writer(): Promise<SessionWriter> {
  const sessionId = await client.session('plain');
  const fence = await acquireFence(stack.deps.db, client.tenantId, sessionId);
  return new SessionWriter(stack.deps, { tenantId: client.tenantId, sessionId, fence });
}

/** The session's deliveries of one event type: [id, status]. */
const deliveriesOf = async (sessionId: string, type: string) =>
  (
    await stack.deps.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'status', 'payload'])
      .where('tenant_id', '=', client.tenantId)
      .where('event_type', '=', type)
      .execute()
  )
    .filter((r) => (r.payload.data as { sessionId?: string }).sessionId === sessionId)
    .map((r) => [r.id, r.status] as const);

describe('SessionWriter outbox', () => {
  it('records the events of a transaction with it and adds their jobs after the commit', async () => {
    const w = await writer();
    // A slot the session holds: ending the run frees it, but that is the caller's step, not the write's.
    const slot = { tenantId: w.ctx.tenantId, sessionId: w.ctx.sessionId, limit: 5, ttlMs: 600_000 };
    await acquireSlot(stack.deps.redis, stack.deps.keys, { ...slot, jobId: 'step-job', priority: 1 });
    await w.write(async (trx, emit) => {
      await setSessionStatus(trx, w.ctx.tenantId, w.ctx.sessionId, 'idle', null, null);
      emit({ type: 'session.status', status: 'idle' });
      emit({ type: 'session.idle' });
    });
    const idle = await deliveriesOf(w.ctx.sessionId, 'session.idle');
    expect(idle.map(([, status]) => status)).toEqual(['pending']);
    expect(await stack.deps.queues.webhook.getJobState(idle[0]![0])).not.toBe('unknown');
    expect(await slotHolders(stack.deps.redis, stack.deps.keys, w.ctx.tenantId)).toEqual([w.ctx.sessionId]);

    // A write that rolls back records nothing.
    await expect(
      w.write(async (_trx, emit) => {
        emit({ type: 'session.error', error: { name: 'APIError', message: 'x' } });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await deliveriesOf(w.ctx.sessionId, 'session.error')).toEqual([]);
  });

  it('a one-statement write records them in its statement (the outbox CTE)', async () => {
    const w = await writer();
    const events: SessionEvent[] = [{ type: 'session.status', status: 'waiting', detail: 'waiting for x' }];
    await w.writeStatement(async (emit, outbox) => {
      await fencedStatement(stack.deps.db, w.ctx, {}, outbox(events));
      for (const e of events) emit(e);
    });
    const waiting = await deliveriesOf(w.ctx.sessionId, 'session.waiting');
    expect(waiting.map(([, status]) => status)).toEqual(['pending']);
    expect(await stack.deps.queues.webhook.getJobState(waiting[0]![0])).not.toBe('unknown');

    // A statement that emits such an event without the CTE still gets it recorded (a follow-up).
    const late: SessionEvent[] = [{ type: 'session.idle' }];
    await w.writeStatement(async (emit) => {
      await fencedStatement(stack.deps.db, w.ctx, {}, []);
      for (const e of late) emit(e);
    });
    expect((await deliveriesOf(w.ctx.sessionId, 'session.idle')).map(([, status]) => status)).toEqual([
      'pending',
    ]);
  });
});
