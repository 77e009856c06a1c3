import { readEvents } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, lookupTool, type Stack, startStack } from '../support/stack.ts';
import { sleep, until } from '../support/wait.ts';

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
      ],
    },
  });
  client = await stack.tenant();
  await client.tool('lookup', lookupTool(stack.tools.url));
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
    const jobId = `extra-wake-${id}`;
    await stack.deps.queues.add('step', jobId, {
      tenantId: client.tenantId,
      sessionId: id,
      reason: 'resume',
    });
    await until(
      'the extra wake job done',
      async () => (await stack.deps.queues.step.getJob(jobId))?.finishedOn,
    );
    expect((await client.call('GET', `/v1/sessions/${id}`)).body.status).toBe('idle');
    expect(stack.mock.calls.length).toBe(before);
  });

  it('delivers a message sent during a run as the last user message of the next call, in the same run', async () => {
    const id = await client.session('helper');
    const before = stack.mock.calls.length;
    // The racepoint: the mock holds the first model call open until the second message is stored.
    const held = stack.mock.hold((call) => JSON.stringify(call.messages).includes('first request'));
    try {
      await client.send(id, 'first request');
      await held.reached;
      const mid = await client.send(id, 'and one more thing');
      // Stored while step 1 was in flight: the session was running, the message is marked
      // mid-run, and the one model call so far has not answered.
      expect(mid.session.status).toBe('running');
      expect(mid.message.info.midRun).toBe(true);
      const during = await client.history(id);
      expect(
        during.messages.filter((m: any) => m.info.role === 'user').map((m: any) => m.parts[0].text),
      ).toEqual(['first request', 'and one more thing']);
      expect(during.messages.some((m: any) => m.info.finish !== undefined)).toBe(false);
      expect(stack.mock.calls.length - before).toBe(1);
    } finally {
      held.release();
    }
    await client.waitIdle(id);
    const calls = stack.mock.calls.slice(before);
    expect(calls).toHaveLength(2);
    expect(JSON.stringify(calls[0]!.messages)).not.toContain('and one more thing');
    const lastUser = [...calls[1]!.messages].reverse().find((m: any) => m.role === 'user');
    expect(JSON.stringify(lastUser)).toContain('and one more thing');
    // The same run: from the first step's start to the answer, the session never went idle.
    const statuses = (await readEvents(stack.deps.redis, stack.deps.keys, id, '0', undefined))
      .map((e) => e.event)
      .filter((e) => e.type === 'session.status')
      .map((e) => (e as { status: string }).status);
    expect(statuses.filter((s) => s === 'idle')).toEqual(['idle']);
    expect(statuses.at(-1)).toBe('idle');
    const log = await client.history(id);
    expect(log.messages.map((m: any) => m.info.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(log.messages.at(-1).info.finish).toBe('stop');
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
      await sleep(30); // on purpose: a step stays inside the racepoint long enough for a second one to overlap
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
      // Every duplicate wake job has run (each either stepped or found nothing to do).
      for (let i = 0; i < 5; i++)
        await until(
          `wake ${i} done`,
          async () => (await stack.deps.queues.step.getJob(`dup-${id}-${i}`))?.finishedOn,
        );
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
