import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stackWorkerPool, type WorkerPool } from '../support/procs.ts';
import { type Client, type Stack, startStack, untilStreamed } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// Session control across real worker processes (`node apps/worker/src/main.ts`):
// - a child session's worker is SIGKILLed while the child streams: the child is a normal durable
//   session, another process finishes it, and its answer still reaches the parent;
// - an abort posted to the gateway reaches the worker process that streams (Redis pub/sub) and
//   stops it within a second.

let stack: Stack;
let client: Client;
let pool: WorkerPool;

const ANSWER = 'the child answer, streamed slowly. '.repeat(4).trim();

beforeAll(async () => {
  stack = await startStack({
    workers: false,
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: 'delegate', lastMessageRole: 'user' },
          reply: {
            toolCalls: [
              {
                name: 'task',
                arguments: { agent: 'researcher', prompt: 'CHILD-TASK research it', description: 'research' },
              },
            ],
          },
        },
        {
          // Also after the crash (the interrupted partial reply is then the last message): same answer.
          when: { lastUserIncludes: 'CHILD-TASK' },
          reply: { text: ANSWER, chunks: 40 },
          latencyMs: 100,
        },
        {
          when: { lastUserIncludes: 'slow story', lastMessageRole: 'user' },
          reply: { text: 'word '.repeat(60), chunks: 60 },
          latencyMs: 100,
        },
      ],
    },
  });
  client = await stack.tenant();
  pool = stackWorkerPool(stack, { lockMs: 2000, stalledMs: 1000, extra: { LOOPLINE_DISABLE_TITLES: '1' } });
  await client.agent('researcher', { mode: 'subagent', system: 'You are the researcher.' });
  await client.agent('lead', { tools: ['task'], system: 'You are the lead.' });
}, 60_000);

afterEach(() => pool?.killAll());
afterAll(() => stack?.close());

const toolPart = async (id: string) =>
  (await client.history(id)).messages.flatMap((m: any) => m.parts).find((p: any) => p.type === 'tool');

describe('session control across worker processes', () => {
  it("SIGKILL of the child's worker mid-stream does not lose the answer", async () => {
    const first = pool.start();
    const id = await client.session('lead');
    await client.send(id, 'please delegate this');
    const childId = await until(
      'child created',
      async () => (await toolPart(id))?.state.metadata?.childSessionId,
    );
    await until('child streaming', async () => {
      const log = await client.history(childId);
      return log.messages.some(
        (m: any) => m.info.role === 'assistant' && m.parts.some((p: any) => p.type === 'text'),
      );
    });
    expect((await client.call('GET', `/v1/sessions/${id}`)).body.status).toBe('waiting');
    await untilStreamed(client, childId); // the first partial text is flushed
    await pool.kill(first);
    pool.start();

    const parent = await client.waitIdle(id, 45_000);
    expect(parent.status).toBe('idle');
    const part = await toolPart(id);
    expect(part.state.status).toBe('completed');
    expect(part.state.output).toBe(ANSWER);
    const childLog = await client.history(childId);
    expect(childLog.messages.filter((m: any) => m.info.error?.name === 'StepInterruptedError')).toHaveLength(
      1,
    );
    expect(childLog.messages.at(-1).info.finish).toBe('stop');
    const final = (await client.history(id)).messages.at(-1);
    expect(final.info.finish).toBe('stop');
    expect(
      JSON.stringify(stack.mock.calls.filter((c) => c.system.includes('You are the lead.')).at(-1)!.messages),
    ).toContain(ANSWER.slice(0, 40));
  }, 90_000);

  it('an abort reaches the worker process that streams and stops its stream', async () => {
    pool.start();
    pool.start();
    const id = await client.session('researcher');
    await client.send(id, 'tell me a slow story');
    await until('streaming', async () => {
      const log = await client.history(id);
      return log.messages.some(
        (m: any) => m.info.role === 'assistant' && m.parts.some((p: any) => p.type === 'text'),
      );
    });
    await untilStreamed(client, id);
    const res = await client.call('POST', `/v1/sessions/${id}/abort`);
    expect(res.status).toBe(202);
    await until(
      'idle',
      async () => (await client.call('GET', `/v1/sessions/${id}`)).body.status === 'idle',
      20_000,
    );
    // The stream had ~6 s to go: its text was cut short, so the abort reached the worker process.
    const reply = (await client.history(id)).messages.at(-1);
    expect(reply.info.error.name).toBe('AbortedError');
    const text = reply.parts.find((p: any) => p.type === 'text').text;
    expect(text.length).toBeGreaterThan(0);
    expect(text.length).toBeLessThan('word '.repeat(60).length);
  }, 60_000);
});
