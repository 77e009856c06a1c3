import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// The durable loop end to end: gateway → step jobs → mock model over HTTP → webhook tools →
// PostgreSQL, on real Redis and PostgreSQL. docs/context.md §6 exit and step cases.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: 'weather', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'lookup', arguments: { topic: 'paris' } }] },
        },
        {
          when: { lastUserIncludes: 'stop-with-tools', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'lookup', arguments: { topic: 'tokyo' } }], finishReason: 'stop' },
        },
        {
          when: { lastUserIncludes: 'slow' },
          reply: { text: 'a slow answer that takes a while to stream', chunks: 20 },
          latencyMs: 60,
        },
      ],
    },
  });
  client = await stack.tenant();
  await client.tool('lookup', {
    kind: 'webhook',
    description: 'facts',
    inputSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
    url: `${stack.tools.url}/lookup`,
  });
  await client.agent('helper', { tools: ['lookup'] });
});
afterAll(() => stack?.close());

describe('loop', () => {
  it('answers a plain message with exactly one model call', async () => {
    const before = stack.mock.calls.length;
    const id = await client.session('helper');
    await client.send(id, 'hello there');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    expect(stack.mock.calls.length - before).toBe(1);
    const log = await client.history(id);
    expect(log.messages.map((m: any) => m.info.role)).toEqual(['user', 'assistant']);
    expect(log.messages[1].info.finish).toBe('stop');
    expect(log.messages[1].parts.some((p: any) => p.type === 'text' && p.text.includes('hello there'))).toBe(
      true,
    );
  });

  it('runs the requested tool once and calls the model again with its result', async () => {
    const before = stack.mock.calls.length;
    const id = await client.session('helper');
    await client.send(id, 'what is the weather in Paris?');
    await client.waitIdle(id);
    const calls = stack.mock.calls.slice(before);
    expect(calls).toHaveLength(2);
    const log = await client.history(id);
    const tool = log.messages[1].parts.find((p: any) => p.type === 'tool');
    expect(tool.state.status).toBe('completed');
    expect(tool.state.output).toContain('Paris');
    expect(stack.tools.calls.get(tool.callId)).toBe(1);
    expect(JSON.stringify(calls[1]!.messages)).toContain('Paris: capital of France');
    expect(log.messages[1].info.finish).toBe('tool-calls');
    expect(log.messages[2].info.finish).toBe('stop');
  });

  it('calls the model again when a reply finished with stop but still has tool parts', async () => {
    const before = stack.mock.calls.length;
    const id = await client.session('helper');
    await client.send(id, 'stop-with-tools please');
    await client.waitIdle(id);
    expect(stack.mock.calls.length - before).toBe(2);
  });

  it('makes no model call when woken after the reply is already finished', async () => {
    const id = await client.session('helper');
    await client.send(id, 'hello again');
    await client.waitIdle(id);
    const before = stack.mock.calls.length;
    await stack.deps.queues.add('step', `extra-wake-${id}`, {
      tenantId: client.tenantId,
      sessionId: id,
      reason: 'resume',
    });
    await new Promise((r) => setTimeout(r, 500));
    await client.waitIdle(id);
    expect(stack.mock.calls.length).toBe(before);
  });

  it('delivers a message sent during a run as the last user message of the next call', async () => {
    const id = await client.session('helper');
    await client.send(id, 'slow please');
    await new Promise((r) => setTimeout(r, 150));
    const before = stack.mock.calls.length;
    await client.send(id, 'and one more thing');
    await client.waitIdle(id);
    const next = stack.mock.calls.slice(before).at(-1)!;
    const lastUser = [...next.messages].reverse().find((m: any) => m.role === 'user');
    expect(JSON.stringify(lastUser)).toContain('and one more thing');
  });

  it('never runs two steps of one session at once', async () => {
    const active = new Map<string, number>();
    let maxActive = 0;
    stack.deps.racepoint = async (name) => {
      if (name !== 'model:before-stream') return;
      // Not keyed per session on purpose: this test's sessions are the only ones running.
      const n = (active.get('s') ?? 0) + 1;
      active.set('s', n);
      maxActive = Math.max(maxActive, n);
      await new Promise((r) => setTimeout(r, 30));
      active.set('s', (active.get('s') ?? 1) - 1);
    };
    try {
      const id = await client.session('helper');
      await Promise.all([client.send(id, 'first'), client.send(id, 'second'), client.send(id, 'third')]);
      for (let i = 0; i < 5; i++) {
        await stack.deps.queues.add('step', `dup-${id}-${i}`, {
          tenantId: client.tenantId,
          sessionId: id,
          reason: 'resume',
        });
      }
      await client.waitIdle(id);
      await new Promise((r) => setTimeout(r, 300));
      await client.waitIdle(id);
      expect(maxActive).toBe(1);
      const steps = await stack.deps.db
        .selectFrom('steps')
        .select(['fence'])
        .where('session_id', '=', id)
        .execute();
      expect(steps.length).toBeGreaterThan(0);
    } finally {
      stack.deps.racepoint = undefined;
    }
  });
});
