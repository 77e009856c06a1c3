import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionQuiet } from '../support/jobs.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// Subagents: a primary agent's built-in `task` tool starts a subagent in a child
// session; the parent's step ends (status waiting, no model call, no worker held) while the child
// runs; the child's final answer becomes the task's result and the parent's loop goes on. On real
// Redis and PostgreSQL, with the mock model over HTTP.

let stack: Stack;
let client: Client;

const task = (agent: string, prompt: string, description = 'look it up') => ({
  toolCalls: [{ name: 'task', arguments: { agent, prompt, description } }],
});

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        // An agent that delegates to itself, and a reply of ten tasks at once (the caps of core's
        // taskLimitRefusal: depth 3, 8 tasks per reply).
        {
          when: { lastUserIncludes: 'RECURSE', lastMessageRole: 'user' },
          reply: task('recursive', 'RECURSE deeper'),
        },
        {
          when: { lastUserIncludes: 'delegate-many', lastMessageRole: 'user' },
          reply: {
            toolCalls: Array.from({ length: 10 }, (_, i) => ({
              name: 'task',
              arguments: { agent: 'researcher', prompt: `CHILD-TASK ${i}`, description: `part ${i}` },
            })),
          },
        },
        // Parents: delegate to a subagent.
        {
          when: { lastUserIncludes: 'delegate-ok', lastMessageRole: 'user' },
          reply: task('researcher', 'CHILD-TASK capital of France'),
        },
        {
          when: { lastUserIncludes: 'delegate-slow', lastMessageRole: 'user' },
          reply: task('researcher', 'CHILD-SLOW tell a long story'),
        },
        {
          when: { lastUserIncludes: 'delegate-primary', lastMessageRole: 'user' },
          reply: task('lead', 'CHILD-TASK x'),
        },
        {
          when: { lastUserIncludes: 'delegate-unknown', lastMessageRole: 'user' },
          reply: task('nobody', 'CHILD-TASK x'),
        },
        {
          when: { lastUserIncludes: 'delegate-fail', lastMessageRole: 'user' },
          reply: task('tiny', 'CHILD-TASK x'),
        },
        // Children.
        {
          when: { lastUserIncludes: 'CHILD-TASK', lastMessageRole: 'user' },
          reply: { text: 'CHILD-ANSWER Paris' },
        },
        {
          when: { lastUserIncludes: 'CHILD-SLOW', lastMessageRole: 'user' },
          reply: { text: 'once upon a time '.repeat(20), chunks: 40 },
          latencyMs: 100,
        },
      ],
    },
  });
  client = await stack.tenant();
  await client.agent('researcher', { mode: 'subagent', system: 'You are the researcher.' });
  await client.agent('lead', { mode: 'primary', tools: ['task'], system: 'You are the lead.' });
  await client.agent('recursive', { mode: 'all', tools: ['task'], system: 'You are recursive.' });
  // A subagent that cannot run at all: its system prompt alone overflows (compaction off) → ContextOverflowError.
  await client.agent('tiny', {
    mode: 'all',
    system: 'You answer in one word. '.repeat(20),
    limits: { context: 60, output: 20 },
    compaction: { auto: false },
  });
});
afterAll(() => stack?.close());

const parentCalls = () => stack.mock.calls.filter((c) => c.system.includes('You are the lead.'));
const childCalls = () => stack.mock.calls.filter((c) => c.system.includes('You are the researcher.'));
const toolParts = (log: any) =>
  log.messages.flatMap((m: any) => m.parts).filter((p: any) => p.type === 'tool');

describe('subagents (task tool)', () => {
  it("a subagent's answer reaches the parent as the task's result, and the parent goes on", async () => {
    const before = { parent: parentCalls().length, child: childCalls().length };
    const id = await client.session('lead');
    await client.send(id, 'please delegate-ok this');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');

    const [part] = toolParts(await client.history(id));
    expect(part.tool).toBe('task');
    expect(part.state.status).toBe('completed');
    expect(part.state.output).toBe('CHILD-ANSWER Paris');
    expect(part.state.title).toBe('look it up');
    const childId = part.state.metadata.childSessionId;
    expect(childId).toMatch(/^ses_/);

    // The child is a normal session of the subagent, linked to its parent.
    const child = await client.call('GET', `/v1/sessions/${childId}`);
    expect(child.body).toMatchObject({ status: 'idle', agent: 'researcher', title: 'look it up' });
    const row = await stack.deps.db
      .selectFrom('sessions')
      .select(['parent_session_id'])
      .where('id', '=', childId)
      .executeTakeFirstOrThrow();
    expect(row.parent_session_id).toBe(id);
    const childLog = await client.history(childId);
    expect(childLog.messages[0].parts[0].text).toBe('CHILD-TASK capital of France');

    // Two parent calls (the task call, then the answer) and one child call: no call while waiting.
    expect(parentCalls().length - before.parent).toBe(2);
    expect(childCalls().length - before.child).toBe(1);
    const last = parentCalls().at(-1)!;
    expect(JSON.stringify(last.messages)).toContain('CHILD-ANSWER Paris');
    // The task tool is sent to the lead (listing the subagents), never to the subagent.
    const taskTool = parentCalls()
      .at(-1)!
      .tools.find((t: any) => t.name === 'task') as any;
    expect(JSON.stringify(taskTool)).toContain('researcher');
    expect(
      childCalls()
        .at(-1)!
        .tools.some((t: any) => t.name === 'task'),
    ).toBe(false);
    const final = (await client.history(id)).messages.at(-1);
    expect(final.info.finish).toBe('stop');
    expect(JSON.stringify(final.parts)).toContain('CHILD-ANSWER Paris');
  });

  it('the parent waits (status waiting, detail naming the child) while the child runs', async () => {
    const id = await client.session('lead');
    await client.send(id, 'delegate-slow please');
    const waiting = await until('parent waiting', async () => {
      const s = (await client.call('GET', `/v1/sessions/${id}`)).body;
      return s.status === 'waiting' ? s : undefined;
    });
    const [part] = toolParts(await client.history(id));
    expect(part.state.status).toBe('running');
    const childId = part.state.metadata.childSessionId;
    expect(waiting.statusDetail).toContain(childId);
    expect(waiting.pendingToolCalls).toEqual([]); // a subagent is not a client call
    // No step job of the parent is active or waiting for the lock while it waits.
    const active = await stack.deps.queues.step.getActive();
    expect(active.filter((j) => j.data.sessionId === id)).toEqual([]);
    const s = await client.waitIdle(id, 20_000);
    expect(s.status).toBe('idle');
    const [done] = toolParts(await client.history(id));
    expect(done.state.status).toBe('completed');
    expect(done.state.output).toContain('once upon a time');
  });

  it('only subagent/all agents can be started; a refusal is a tool error the model sees', async () => {
    for (const [text, expected] of [
      ['delegate-primary now', 'cannot run as a subagent'],
      ['delegate-unknown now', 'Unknown agent "nobody"'],
    ] as const) {
      const id = await client.session('lead');
      await client.send(id, text);
      await client.waitIdle(id);
      const [part] = toolParts(await client.history(id));
      expect(part.state.status).toBe('error');
      expect(part.state.error).toContain(expected);
      expect(part.state.error).toContain('Available subagents: recursive, researcher, tiny');
      const children = await stack.deps.db
        .selectFrom('sessions')
        .select('id')
        .where('parent_session_id', '=', id)
        .execute();
      expect(children).toEqual([]);
    }
  });

  it("a child that fails gives the parent's task an error with the child's error", async () => {
    const id = await client.session('lead');
    await client.send(id, 'delegate-fail now');
    await client.waitIdle(id);
    const [part] = toolParts(await client.history(id));
    expect(part.state.status).toBe('error');
    expect(part.state.error).toContain('The subagent failed');
    expect(part.state.error).toContain('ContextOverflowError');
    const final = (await client.history(id)).messages.at(-1);
    expect(final.info.finish).toBe('stop');
  });

  it('aborting the parent aborts the child; both end idle, the task interrupted', async () => {
    const id = await client.session('lead');
    await client.send(id, 'delegate-slow again');
    const childId = await until('child streaming', async () => {
      const [part] = toolParts(await client.history(id));
      const cid = part?.state?.metadata?.childSessionId;
      if (!cid) return undefined;
      const log = await client.history(cid);
      return log.messages.some((m: any) => m.info.role === 'assistant') ? (cid as string) : undefined;
    });
    const res = await client.call('POST', `/v1/sessions/${id}/abort`);
    expect(res.status).toBe(202);
    expect(res.body.sessionIds).toEqual([id, childId]);
    await client.waitIdle(id, 10_000);
    await client.waitIdle(childId, 10_000);
    const [part] = toolParts(await client.history(id));
    expect(part.state).toMatchObject({ status: 'error', interrupted: true });
    const childLog = await client.history(childId);
    expect(childLog.messages.at(-1).info.error.name).toBe('AbortedError');
    // Nothing resumes either session afterwards: no job of either is left, no model call made.
    const calls = stack.mock.calls.length;
    await until('no job of the parent left', () => sessionQuiet(stack.deps.queues, id));
    await until('no job of the child left', () => sessionQuiet(stack.deps.queues, childId));
    expect(stack.mock.calls.length).toBe(calls);
    expect((await client.call('GET', `/v1/sessions/${id}`)).body.status).toBe('idle');
  });

  it('heals a lost notification: a parent step finds its stopped child and completes the task', async () => {
    // Lose every child → parent notification (as if the child's worker died right after going idle).
    const queues = stack.deps.queues;
    const add = queues.add;
    queues.add = (async (kind: any, jobId: any, data: any, opts: any) => {
      if (data?.reason === 'child-done') return;
      return add.call(queues, kind, jobId, data, opts);
    }) as typeof add;
    let childId: string;
    const id = await client.session('lead');
    try {
      await client.send(id, 'delegate-slow heal');
      childId = await until('child created', async () => {
        const [part] = toolParts(await client.history(id));
        return part?.state?.metadata?.childSessionId as string | undefined;
      });
      await client.waitIdle(childId, 20_000);
      // Everything the child's end could have triggered has run: the parent still waits.
      await until('no job of the child left', () => sessionQuiet(stack.deps.queues, childId));
      await until('no job of the parent left', () => sessionQuiet(stack.deps.queues, id));
      expect((await client.call('GET', `/v1/sessions/${id}`)).body.status).toBe('waiting');
    } finally {
      queues.add = add;
    }
    // Any later wake of the parent settles the task from durable state.
    await queues.add('step', `heal-${id}`, { tenantId: client.tenantId, sessionId: id, reason: 'resume' });
    const s = await client.waitIdle(id, 10_000);
    expect(s.status).toBe('idle');
    const [part] = toolParts(await client.history(id));
    expect(part.state.status).toBe('completed');
    // Answered once: one reply after the task result.
    const replies = (await client.history(id)).messages.filter((m: any) => m.info.role === 'assistant');
    expect(replies).toHaveLength(2);
  });
  it('subagents nest at most 3 levels: the deepest task is refused and the tree still answers', async () => {
    const id = await client.session('recursive');
    await client.send(id, 'RECURSE now');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    // The root and three generations below it; the third generation's own task was refused.
    const chain = [id];
    for (;;) {
      const parts = toolParts(await client.history(chain.at(-1)!));
      const child = parts[0]?.state.metadata?.childSessionId;
      if (!child) {
        expect(parts[0].state.status).toBe('error');
        expect(parts[0].state.error).toMatch(/Subagents nest at most 3 levels deep/);
        break;
      }
      chain.push(child);
    }
    expect(chain).toHaveLength(4);
    for (const sid of chain)
      expect((await client.call('GET', `/v1/sessions/${sid}`)).body.status).toBe('idle');
  });

  it('one reply starts at most 8 subagent tasks; the rest are refused with the reason', async () => {
    const id = await client.session('lead');
    await client.send(id, 'please delegate-many');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    const parts = toolParts(await client.history(id));
    expect(parts).toHaveLength(10);
    const started = parts.filter((p: any) => p.state.metadata?.childSessionId);
    const refused = parts.filter((p: any) => !p.state.metadata?.childSessionId);
    expect(started).toHaveLength(8);
    for (const p of started) expect(p.state.status).toBe('completed');
    expect(refused).toHaveLength(2);
    for (const p of refused) expect(p.state.error).toMatch(/At most 8 subagent tasks start from one reply/);
  });
});
