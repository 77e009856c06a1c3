import { jobIds } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import {
  bigTurn,
  compactions,
  defineBig,
  isSummary,
  log,
  markerOf,
  NO_PRUNE,
  summaryRule,
  WHOLE_OUTPUTS,
  waitFor,
} from './context-fixtures.ts';

// Background compaction (docs/context.md §2, the two thresholds): an idle session above the
// lower threshold (trigger × backgroundRatio; here 7,000 × 0.8 = 5,600) is compacted after an idle
// delay, without restarting the loop; a message that arrives first makes the job a no-op.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant();
  await defineBig(client, stack);
  stack.mock.setScenario({
    rules: [
      summaryRule,
      // ~1,950 + ~1,950 + ~1,700 tokens of outputs: above 5,600, under 7,000.
      ...bigTurn('first', ['b1'], 150, 'first done'),
      ...bigTurn('second', ['b2'], 150, 'second done'),
      ...bigTurn('third', ['b3'], 130, 'third done'),
    ],
  });
});
afterAll(() => stack?.close());

async function fill(agent: string): Promise<string> {
  const id = await client.session(agent);
  for (const text of ['first task', 'second task', 'third task']) {
    await client.send(id, text);
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
  }
  return id;
}

describe('context: background compaction', () => {
  it('compacts an idle session above the background threshold after the delay, and stays idle', async () => {
    await client.agent('bg-fast', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      ...WHOLE_OUTPUTS,
      compaction: { ...NO_PRUNE, backgroundDelayMs: 300 },
    });
    const id = await fill('bg-fast');
    const before = (await client.call('GET', `/v1/sessions/${id}`)).body;
    expect(before.tokens.used).toBeGreaterThanOrEqual(before.tokens.background);
    expect(before.tokens.used).toBeLessThan(before.tokens.trigger);
    const callsBefore = stack.mock.calls.length;

    const [row] = await waitFor(
      async () => {
        const rows = await compactions(stack, id);
        return rows.some((r) => r.status === 'completed') ? rows : undefined;
      },
      15_000,
      'the background compaction',
    );
    expect(row).toMatchObject({ status: 'completed', reason: 'background', requests: 1 });
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    expect(s.compaction.count).toBe(1);
    expect(s.tokens.used).toBeLessThan(s.tokens.background);

    const messages = await log(client, id);
    expect(markerOf(messages.at(-2))).toMatchObject({ auto: true, background: true });
    // No continue message and no model call after the summary: the loop did not restart.
    expect(isSummary(messages.at(-1))).toBe(true);
    const calls = stack.mock.calls.slice(callsBefore);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.system).toContain('working state');
  });

  it('is a no-op when a new message arrives before it runs', async () => {
    await client.agent('bg-slow', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      ...WHOLE_OUTPUTS,
      compaction: { ...NO_PRUNE, backgroundDelayMs: 60_000 },
    });
    const id = await fill('bg-slow');
    const stepCount = (await client.call('GET', `/v1/sessions/${id}`)).body.stepCount;
    const jobId = jobIds.background(id, stepCount);
    const scheduled = await waitFor(() => stack.deps.queues.background.getJob(jobId), 10_000, 'the schedule');
    expect(await scheduled.getState()).toBe('delayed');

    // 1. A message arrives: its turn removes the scheduled job.
    await client.send(id, 'hello again');
    await client.waitIdle(id);
    expect(await stack.deps.queues.background.getJob(jobId)).toBeUndefined();

    // 2. A job of the old idle period that could not be removed (already running) finds the new
    //    turn and does nothing.
    const late = `${jobId}-late`;
    await stack.deps.queues.add('background', late, { tenantId: client.tenantId, sessionId: id, stepCount });
    await waitFor(
      async () => (await stack.deps.queues.background.getJob(late))?.isCompleted(),
      10_000,
      'the late job',
    );
    expect(await compactions(stack, id)).toHaveLength(0);
    expect((await log(client, id)).some((m) => markerOf(m))).toBe(false);
  });
});
