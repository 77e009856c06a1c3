import { acquireSlot, readEvents, slotHolders } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { sleep } from '../support/wait.ts';

// The per-tenant cap on running sessions: over the cap, sessions wait in the
// queue (status queued, "waiting for a tenant slot (n/cap running)") instead of failing, and run
// as slots free up; never more than the cap at once. A slot whose holder died expires.

let stack: Stack;
let client: Client;

async function setLimits(tenantId: string, limits: Record<string, number | null>) {
  const res = await fetch(`${stack.url}/v1/admin/tenants/${tenantId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${stack.operatorToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ limits }),
  });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      // ~300 ms per answer, so sessions overlap.
      default: { text: 'a deliberately slow answer, streamed in many small chunks', chunks: 15 },
      latencyMs: 20,
    },
    fairness: { slotRetryMs: 150, slotTtlMs: 5_000 },
  });
  client = await stack.tenant('capped');
  await client.agent('helper', {});
});
afterAll(() => stack?.close());

describe('tenant concurrency cap', () => {
  it('runs at most the cap at once; the others wait queued, then run', async () => {
    await setLimits(client.tenantId, { maxConcurrentSessions: 2 });
    const ids = await Promise.all(Array.from({ length: 6 }, () => client.session('helper')));
    // Model streams in flight (the only sessions of this file running now).
    let streaming = 0;
    let maxStreaming = 0;
    stack.deps.racepoint = (name) => {
      if (name === 'model:before-stream') maxStreaming = Math.max(maxStreaming, ++streaming);
      if (name === 'model:after-stream') streaming--;
    };
    let maxRunning = 0;
    let maxHolders = 0;
    const details = new Set<string>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const rows = await stack.deps.db
          .selectFrom('sessions')
          .select(['status', 'status_detail'])
          .where('id', 'in', ids)
          .execute();
        maxRunning = Math.max(maxRunning, rows.filter((r) => r.status === 'running').length);
        for (const r of rows) if (r.status === 'queued' && r.status_detail) details.add(r.status_detail);
        maxHolders = Math.max(
          maxHolders,
          (await slotHolders(stack.deps.redis, stack.deps.keys, client.tenantId)).length,
        );
        await sleep(15); // the sampler's pace: it records every state it sees, it waits for none
      }
    })();
    try {
      await Promise.all(ids.map((id, i) => client.send(id, `question ${i}`)));
      const done = await Promise.all(ids.map((id) => client.waitIdle(id, 30_000)));
      sampling = false;
      await sampler;
      expect(done.map((s) => s.status)).toEqual(Array(6).fill('idle'));
      expect(maxRunning).toBeLessThanOrEqual(2);
      expect(maxStreaming).toBeLessThanOrEqual(2);
      expect(maxHolders).toBeLessThanOrEqual(2);
      expect(maxStreaming).toBe(2); // the cap is used, not just respected
      expect(details).toContain('waiting for a tenant slot (2/2 running)');
      for (const id of ids) {
        const log = await client.history(id);
        expect(log.messages.map((m: any) => m.info.role)).toEqual(['user', 'assistant']);
        expect(log.messages[1].info.finish).toBe('stop');
      }
      // Every slot was given back when the sessions went idle.
      expect(await slotHolders(stack.deps.redis, stack.deps.keys, client.tenantId)).toEqual([]);
    } finally {
      sampling = false;
      stack.deps.racepoint = undefined;
    }
  }, 60_000);

  it('gives the slot of a dead holder back when its lease expires', async () => {
    await setLimits(client.tenantId, { maxConcurrentSessions: 1 });
    // A session "running" on a worker that died: its slot is never released, only expires.
    const dead = await acquireSlot(stack.deps.redis, stack.deps.keys, {
      tenantId: client.tenantId,
      sessionId: 'ses_on_a_dead_worker',
      limit: 1,
      ttlMs: 4_000,
      jobId: 'dead-job',
      priority: 1,
    });
    expect(dead.acquired).toBe(true);
    const id = await client.session('helper');
    await client.send(id, 'are you there?');
    await expect
      .poll(async () => (await client.call('GET', `/v1/sessions/${id}`)).body.statusDetail, {
        timeout: 3_500,
      })
      .toBe('waiting for a tenant slot (1/1 running)');
    const s = await client.waitIdle(id, 10_000);
    expect(s.status).toBe('idle');
    // The wait was also told as an event, for clients that follow the stream instead of polling.
    const events = (await readEvents(stack.deps.redis, stack.deps.keys, id, '0', undefined, 10_000)).map(
      (e) => e.event,
    );
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'session.status',
        status: 'queued',
        detail: 'waiting for a tenant slot (1/1 running)',
      }),
    );
    // Nobody released the dead holder's slot: it ran because the lease expired.
    expect(await slotHolders(stack.deps.redis, stack.deps.keys, client.tenantId)).not.toContain(
      'ses_on_a_dead_worker',
    );
    await setLimits(client.tenantId, { maxConcurrentSessions: null });
  });
});
