import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FaultStack, startFaultStack } from '../support/fault-stack.ts';
import type { FaultToolServer } from '../support/fault-tools.ts';
import { sessionQuiet } from '../support/jobs.ts';
import type { WorkerPool } from '../support/procs.ts';
import { type Client, type Stack, untilStreamed } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// Nothing lost, nothing duplicated: real worker processes are SIGKILLed mid-stream and
// mid-tool, a new process takes over, and the session finishes as if nothing happened.

let fault: FaultStack;
let stack: Stack;
let client: Client;
let tools: FaultToolServer;
let pool: WorkerPool;

beforeAll(async () => {
  fault = await startFaultStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: 'stream', lastMessageRole: 'user' },
          reply: { text: 'a long streamed answer '.repeat(10), chunks: 40 },
          latencyMs: 100,
        },
        {
          when: { lastUserIncludes: 'tool', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'slow', arguments: { ms: 3000 } }] },
        },
      ],
    },
    workers: { lockMs: 2000, stalledMs: 1000 },
  });
  ({ stack, client, tools, pool } = fault);
}, 60_000);

afterEach(() => pool?.killAll());
afterAll(() => fault?.close());

const db = () => stack.deps.db;

describe('a worker process killed', () => {
  it('mid-stream: the next process closes the step as interrupted and finishes the turn', async () => {
    const first = pool.start();
    const id = await client.session('agent');
    await client.send(id, 'please stream something');
    await untilStreamed(client, id); // past the first partial-text flush
    await pool.kill(first);
    pool.start();
    const session = await client.waitIdle(id, 30_000);
    expect(session.status).toBe('idle');
    const log = await client.history(id);
    const roles = log.messages.map((m: any) => m.info.role);
    expect(roles.filter((r: string) => r === 'user')).toHaveLength(1);
    const interrupted = log.messages.filter((m: any) => m.info.error?.name === 'StepInterruptedError');
    expect(interrupted).toHaveLength(1);
    // The partial text streamed before the kill was flushed and is kept (abort-like errors keep content).
    expect(interrupted[0].parts.find((p: any) => p.type === 'text')?.text.length).toBeGreaterThan(0);
    expect(log.messages.at(-1).info.finish).toBe('stop');
  }, 60_000);

  it('mid-tool: the tool is marked interrupted, never run twice, and the loop goes on', async () => {
    const first = pool.start();
    const id = await client.session('agent');
    await client.send(id, 'run the tool');
    const callId = await until('tool running', async () => {
      const row = await db()
        .selectFrom('parts')
        .select('data')
        .where('session_id', '=', id)
        .where('type', '=', 'tool')
        .executeTakeFirst();
      const data = row?.data as any;
      return data?.state?.status === 'running' ? (data.callId as string) : undefined;
    });
    await until('tool server reached', async () => tools.calls.get(callId) === 1);
    await pool.kill(first);
    pool.start();
    await client.waitIdle(id, 30_000);
    const log = await client.history(id);
    const tool = log.messages
      .flatMap((m: any) => m.parts)
      .find((p: any) => p.type === 'tool' && p.callId === callId);
    expect(tool.state.status).toBe('error');
    expect(tool.state.interrupted).toBe(true);
    // Nothing is left to run that could call the tool again.
    await until('no job of the session left', () => sessionQuiet(stack.deps.queues, id));
    expect(tools.calls.get(callId)).toBe(1);
    const model = await client.history(id, 'model');
    expect(JSON.stringify(model)).toContain('[Tool execution was interrupted]');
  }, 60_000);
});
