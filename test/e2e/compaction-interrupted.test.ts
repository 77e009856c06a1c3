import { randomUUID } from 'node:crypto';
import { DEFAULT_MAX_INTERRUPTED_STEPS } from '@loopline/core';
import { currentFence, startCompaction } from '@loopline/db';
import { duplicateRedis } from '@loopline/queue';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processCompact } from '../../apps/worker/src/processors/compact.ts';
import { enqueueCompact } from '../../apps/worker/src/processors/prune.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { compactions, log, markerOf } from './context-fixtures.ts';

// A compaction that takes its worker down every time (a poison request) must not come back for
// ever: BullMQ restarts a job whose worker died as a stalled job, and counts it (`stalledCounter`).
// Past the turn's interruption budget (LOOPLINE_MAX_INTERRUPTED_STEPS, the step loop's crash-loop
// cap) the compaction job ends the turn with a MaxInterruptionsReachedError instead of running
// again, and closes the run its dead worker left `running`. Real Redis, BullMQ and PostgreSQL: the
// job is the queue's own, taken as a worker takes it, with its stall count set where BullMQ keeps it.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant();
  await client.agent('plain', {});
});
afterAll(() => stack?.close());

describe('a compaction interrupted again and again', () => {
  it('ends the turn with MaxInterruptionsReachedError at the interruption budget', async () => {
    const id = await client.session('plain');
    await client.send(id, 'hello');
    await client.waitIdle(id);
    // From here on nothing runs but what the test runs.
    await stack.stopWorkers();
    expect((await client.call('POST', `/v1/sessions/${id}/compact`, {})).status).toBe(202);
    const marker = (await log(client, id)).find((m) => markerOf(m))!;
    const { tenantId } = client;
    const fence = (await currentFence(stack.deps.db, tenantId, id))!;
    // The run its last worker left behind when it died.
    await stack.deps.db.transaction().execute((trx) =>
      startCompaction(trx, {
        id: `cmp_dead_${randomUUID().slice(0, 8)}`,
        tenantId,
        sessionId: id,
        messageId: marker.info.id,
        partId: markerOf(marker).id,
        reason: 'manual',
      }),
    );

    const { queues, keys } = stack.deps;
    await enqueueCompact(stack.deps, tenantId, id, marker.info.id, fence);
    const [queued] = await queues.compact.getJobs(['waiting', 'prioritized']);
    const budget = stack.deps.maxInterruptedSteps ?? DEFAULT_MAX_INTERRUPTED_STEPS;
    // Where BullMQ's stalled check counts the restarts of a job whose worker died.
    await stack.deps.redis.hset(`${keys.queuePrefix}:${queues.compact.name}:${queued!.id}`, 'stc', budget);
    const token = randomUUID();
    const taker = new Worker(queues.compact.name, undefined, {
      connection: duplicateRedis(stack.deps.redis, { maxRetriesPerRequest: null }),
      prefix: keys.queuePrefix,
    });
    const job = await taker.getNextJob(token);
    expect(job?.id).toBe(queued!.id);
    expect(job!.stalledCounter).toBe(budget);
    const callsBefore = stack.mock.calls.length;
    await processCompact(stack.deps, job!, token);
    await taker.close();

    const session = (await client.call('GET', `/v1/sessions/${id}`)).body;
    expect(session.status).toBe('error');
    expect(session.error.name).toBe('MaxInterruptionsReachedError');
    expect(session.error.data).toMatchObject({ interrupted: budget, compaction: true });
    // No summary was asked for, and no run is left `running`.
    expect(stack.mock.calls.length).toBe(callsBefore);
    const runs = await compactions(stack, id);
    expect(runs.map((r) => r.status)).toEqual(['failed']);
    expect((runs[0]!.error as { message: string }).message).toMatch(/interrupted \d+ times/);
    expect((await log(client, id)).some((m) => m.info.summary === true)).toBe(false);
  });
});
