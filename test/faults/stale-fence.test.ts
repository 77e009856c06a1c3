import { acquireFence } from '@loopline/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// A runner that lost the session (another runner bumped the fence while it was paused) cannot
// write: its transactions fail with StaleFenceError and roll back, and the session carries on
// under the new runner.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant();
  await client.agent('agent', {});
});
afterAll(() => stack?.close());

describe('fencing', () => {
  it("rejects a stale runner's writes after a newer runner took the fence", async () => {
    const id = await client.session('agent');
    let bumped = false;
    stack.deps.racepoint = async (name) => {
      if (name !== 'model:after-stream' || bumped) return;
      bumped = true;
      // As if this runner froze past its lock TTL and another runner took the session over.
      await acquireFence(stack.deps.db, client.tenantId, id);
    };
    try {
      await client.send(id, 'hello');
      await until('the fence bumped mid-step', () => bumped, 10_000);
      // The stale runner has tried its finishing write and stopped: no active job of the session.
      await until('the stale runner stopped', async () => {
        const active = await stack.deps.queues.step.getJobs(['active']);
        return !active.some((j) => j?.data?.sessionId === id);
      });
    } finally {
      stack.deps.racepoint = undefined;
    }
    const stale = await client.history(id);
    const reply = stale.messages[1];
    expect(reply.info.role).toBe('assistant');
    expect(reply.info.finish).toBeUndefined(); // the finishing write was rejected
    expect(reply.parts.some((p: any) => p.type === 'step-finish')).toBe(false);
    const ledger = await stack.deps.db
      .selectFrom('steps')
      .select(['finished_at', 'fence'])
      .where('session_id', '=', id)
      .execute();
    expect(ledger).toHaveLength(1);
    expect(ledger[0]!.finished_at).toBeNull();

    // The session goes on under a new runner: the stale step is closed as interrupted.
    await stack.deps.queues.add('step', `resume-${id}`, {
      tenantId: client.tenantId,
      sessionId: id,
      reason: 'resume',
    });
    await client.waitIdle(id);
    const log = await client.history(id);
    expect(log.messages[1].info.error?.name).toBe('StepInterruptedError');
    expect(log.messages.at(-1).info.finish).toBe('stop');
  });
});
