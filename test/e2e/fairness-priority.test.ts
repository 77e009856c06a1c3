import { PRIORITY } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// Priorities: a session's step jobs carry its kind's BullMQ priority, so with a
// single step worker slot an interactive session's step runs before batch steps already queued.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({ concurrency: { step: 1 } });
  client = await stack.tenant('prio');
  await client.agent('helper', {});
});
afterAll(() => stack?.close());

const lastUser = (call: { messages: any[] }) =>
  JSON.stringify([...call.messages].reverse().find((m) => m.role === 'user'));

describe('priorities', () => {
  it("runs an interactive session's step before the batch steps queued ahead of it", async () => {
    const step = stack.deps.queues.step;
    // Hold the step queue while the batch posts its first messages and the user posts theirs.
    await step.pause();
    const batch = await client.call('POST', '/v1/batches', {
      agent: 'helper',
      conversations: Array.from({ length: 5 }, (_, i) => ({ messages: [`batch question ${i}`] })),
    });
    expect(batch.status).toBe(201);
    await expect
      .poll(async () => (await step.getJobs(['prioritized', 'waiting'])).length, {
        timeout: 10_000,
      })
      .toBe(5);
    const queued = await step.getJobs(['prioritized', 'waiting']);
    expect(queued.map((j) => j.opts.priority)).toEqual(Array(5).fill(PRIORITY.batch));

    const interactive = await client.session('helper');
    await client.send(interactive, 'interactive question');
    const wake = (await step.getJobs(['prioritized', 'waiting'])).find(
      (j) => j.data.sessionId === interactive,
    );
    expect(wake?.opts.priority).toBe(PRIORITY.interactive);

    const before = stack.mock.calls.length;
    await step.resume();
    await client.waitIdle(interactive, 20_000);
    await expect
      .poll(async () => (await client.call('GET', `/v1/batches/${batch.body.id}`)).body.status, {
        timeout: 30_000,
      })
      .toBe('completed');
    const calls = stack.mock.calls.slice(before);
    expect(calls).toHaveLength(6);
    expect(lastUser(calls[0]!)).toContain('interactive question');
    expect(calls.slice(1).every((c) => lastUser(c).includes('batch question'))).toBe(true);
  }, 60_000);
});
