import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, lookupTool, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// Messages during a run (docs/context.md §4), per agent `midRunMessages`:
// - steer: delivered at the next step boundary, wrapped in a <system-reminder>;
// - queue: held until the turn's loop ends, then they start the next turn (unwrapped).

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        {
          // The first step streams slowly, then asks for a tool: the turn needs a second step.
          when: { lastUserIncludes: 'long job', lastMessageRole: 'user' },
          reply: {
            text: 'working on it step by step right now',
            toolCalls: [{ name: 'lookup', arguments: { topic: 'paris' } }],
          },
          latencyMs: 120,
        },
      ],
    },
  });
  client = await stack.tenant();
  await client.tool('lookup', lookupTool(stack.tools.url));
  await client.agent('steerer', { tools: ['lookup'], system: 'steer agent', midRunMessages: 'steer' });
  await client.agent('queuer', { tools: ['lookup'], system: 'queue agent', midRunMessages: 'queue' });
});
afterAll(() => stack?.close());

/** Sends the long job, and a second message while its first step streams. */
async function runWithMidRunMessage(agent: string) {
  const id = await client.session(agent);
  const system = agent === 'queuer' ? 'queue agent' : 'steer agent';
  const before = stack.mock.calls.length;
  await client.send(id, 'start the long job');
  await until(
    'first step streaming',
    async () => (await client.call('GET', `/v1/sessions/${id}`)).body.status === 'running',
  );
  const mid = await client.send(id, 'ALSO: what about Tokyo?');
  expect(mid.session.status).toBe('running');
  expect(mid.message.info.midRun).toBe(true);
  await client.waitIdle(id, 20_000);
  const calls = stack.mock.calls.slice(before).filter((c) => c.system.includes(system));
  return { id, calls };
}

const lastUser = (call: { messages: any[] }) => [...call.messages].reverse().find((m) => m.role === 'user');

describe('mid-run messages', () => {
  it('steer: delivered at the next step, wrapped in a system reminder', async () => {
    const { calls } = await runWithMidRunMessage('steerer');
    expect(calls).toHaveLength(2);
    expect(JSON.stringify(calls[0]!.messages)).not.toContain('Tokyo');
    // The second step (after the tool result) already sees it, as a reminder.
    const second = JSON.stringify(calls[1]!.messages);
    expect(second).toContain('Paris: capital of France');
    expect(JSON.stringify(lastUser(calls[1]!))).toContain('<system-reminder>');
    expect(JSON.stringify(lastUser(calls[1]!))).toContain('ALSO: what about Tokyo?');
  });

  it('queue: held until the turn ends, then it starts the next turn (not wrapped)', async () => {
    const { id, calls } = await runWithMidRunMessage('queuer');
    expect(calls).toHaveLength(3);
    // The turn's own steps never see it: the second step answers the first request alone.
    expect(JSON.stringify(calls[0]!.messages)).not.toContain('Tokyo');
    expect(JSON.stringify(calls[1]!.messages)).not.toContain('Tokyo');
    expect(JSON.stringify(calls[1]!.messages)).toContain('Paris: capital of France');
    expect(calls[1]!.messages.at(-1)!.role).toBe('tool');
    // Then a new turn: the queued message after the turn's final reply, unwrapped.
    const third = calls[2]!;
    expect(third.messages.at(-1)!.role).toBe('user');
    expect(JSON.stringify(third.messages.at(-1))).toContain('ALSO: what about Tokyo?');
    expect(JSON.stringify(third.messages)).not.toContain('<system-reminder>');
    expect(third.messages.at(-2)!.role).toBe('assistant');
    expect(JSON.stringify(third.messages.at(-2))).toContain('Done:');

    // The log keeps arrival order; the model view shows the queued message where its turn began.
    const log = await client.history(id);
    const kinds = log.messages.map((m: any) => (m.info.role === 'user' ? m.parts[0].text : m.info.finish));
    expect(kinds).toEqual(['start the long job', 'tool-calls', 'ALSO: what about Tokyo?', 'stop', 'stop']);
    const view = (await client.history(id, 'model')).messages;
    const order = view.map((m: any) => m.role);
    expect(order).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant']);
    expect(JSON.stringify(view[4])).toContain('Tokyo');
  });

  it('queue: while held, the model view (GET …/messages?view=model) leaves the queued message out', async () => {
    const id = await client.session('queuer');
    await client.send(id, 'start the long job again');
    await until(
      'running',
      async () => (await client.call('GET', `/v1/sessions/${id}`)).body.status === 'running',
    );
    await client.send(id, 'ALSO: and Rome?');
    const view = JSON.stringify((await client.history(id, 'model')).messages);
    expect(view).not.toContain('Rome');
    await client.waitIdle(id, 20_000);
    expect(JSON.stringify((await client.history(id, 'model')).messages)).toContain('Rome');
  });
});
