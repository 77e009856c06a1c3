import { readEvents } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// The writes of a model step (step/call-model.ts): the step's start events go out with its first
// published delta (or with its next write) instead of a publish of their own, and are still
// complete and in order; a lone read_output call (it only reads PostgreSQL) is not written as
// running before it runs: its part goes in completed with the step's finish.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant();
});
afterAll(() => stack?.close());

async function events(sessionId: string) {
  const out = await readEvents(stack.deps.redis, stack.deps.keys, sessionId, '0', undefined, 10_000);
  return out.map((e) => e.event);
}

describe('step writes', () => {
  it('publishes every start event once, before the deltas of its message', async () => {
    stack.mock.setScenario({ rules: [{ reply: { text: 'one two three' } }] });
    await client.agent('plain', {});
    const id = await client.session('plain');
    await client.send(id, 'hello');
    expect((await client.waitIdle(id)).status).toBe('idle');
    const all = await events(id);
    const log = (await client.history(id)).messages as Array<{ info: { id: string; role: string } }>;
    const assistant = log.find((m) => m.info.role === 'assistant')!.info.id;
    const created = all.findIndex((e) => e.type === 'message.updated' && e.message.id === assistant);
    const firstDelta = all.findIndex((e) => e.type === 'part.delta' && e.messageId === assistant);
    expect(created).toBeGreaterThanOrEqual(0);
    expect(firstDelta).toBeGreaterThan(created);
    // The step-start part and the running status, each once.
    const stepStarts = all.filter(
      (e) => e.type === 'part.updated' && e.part.messageId === assistant && e.part.type === 'step-start',
    );
    expect(stepStarts).toHaveLength(1);
    expect(all.filter((e) => e.type === 'session.status' && e.status === 'running')).toHaveLength(1);
  });

  it('publishes the start events of a step that streams no text with its finish', async () => {
    stack.mock.setScenario({ rules: [{ reply: { fault: 'http', status: 401 } }] });
    await client.agent('failing', {});
    const id = await client.session('failing');
    await client.send(id, 'hello');
    expect((await client.waitIdle(id)).status).toBe('error');
    const all = await events(id);
    const log = (await client.history(id)).messages as Array<{ info: { id: string; role: string } }>;
    for (const m of log.filter((x) => x.info.role === 'assistant')) {
      const updates = all.filter((e) => e.type === 'message.updated' && e.message.id === m.info.id);
      // Created, then ended with its error.
      expect(updates.length).toBeGreaterThanOrEqual(2);
    }
  });

  it('writes a lone read_output call once, completed, with the finish', async () => {
    stack.mock.setScenario({
      rules: [
        {
          when: { lastMessageRole: 'user' },
          reply: {
            text: 'Reading.',
            toolCalls: [{ name: 'read_output', arguments: { outputId: 'out_nope' } }],
          },
        },
        { when: { lastMessageRole: 'tool' }, reply: { text: 'It has expired.' } },
      ],
    });
    await client.agent('reader', { tools: ['read_output'] });
    const id = await client.session('reader');
    await client.send(id, 'read the output');
    const s = await client.waitIdle(id);
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
    const log = (await client.history(id)).messages as Array<{ info: { role: string }; parts: any[] }>;
    const tool = log.flatMap((m) => m.parts).find((p) => p.type === 'tool');
    expect(tool).toMatchObject({ tool: 'read_output', state: { status: 'completed' } });
    expect(tool.state.output).toContain('No stored output with id "out_nope"');
    expect(tool.state.time.end).toBeGreaterThanOrEqual(tool.state.time.start);
    // The parts of the calling step, in stream order, then the next step's answer.
    const first = log.find((m) => m.info.role === 'assistant')!;
    expect(first.parts.map((p) => p.type)).toEqual(['step-start', 'text', 'tool', 'step-finish']);
    expect(stack.mock.calls.at(-1)?.messages.at(-1)).toMatchObject({ role: 'tool', toolName: 'read_output' });
    // Its part.updated events: the completed state is the last one published.
    const updates = (await events(id)).filter((e) => e.type === 'part.updated' && e.part.id === tool.id);
    expect(updates.at(-1)).toMatchObject({ part: { state: { status: 'completed' } } });
  });
});
