import { createLoopline, type Loopline, LooplineError, type StreamedEvent } from '@loopline/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../support/stack.ts';

// @loopline/client against the running service (gateway on a port, workers, mock model over
// HTTP): send with Prefer: wait, the resumable event iterator (a stream cut mid-turn resumes
// with Last-Event-ID and yields nothing twice), client tools, listing, deletion and typed errors.

let stack: Stack;
let ll: Loopline;
let apiKey: string;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: 'slowly' },
          reply: { text: 'a slow answer that streams in many small pieces', chunks: 24 },
          latencyMs: 40,
        },
        {
          when: { lastUserIncludes: 'pick a colour', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'pick_colour', arguments: { from: 'red,blue' } }] },
        },
      ],
    },
  });
  const admin = createLoopline({ baseUrl: stack.url, apiKey: stack.operatorToken });
  ({ apiKey } = await admin.admin.createTenant('client-e2e'));
  ll = createLoopline({ baseUrl: stack.url, apiKey });
  await ll.tools.put('pick_colour', {
    kind: 'client',
    description: 'Ask the user to pick a colour',
    inputSchema: { type: 'object', properties: { from: { type: 'string' } }, required: ['from'] },
  });
  await ll.agents.put('helper', { model: 'compatible/mock', tools: ['pick_colour'] });
});
afterAll(() => stack?.close());

describe('@loopline/client', () => {
  it('sends with wait and gets the finished turn; without wait, 202 then waitForIdle', async () => {
    const session = await ll.sessions.create({ agent: 'helper', metadata: { userId: 'u-1' } });
    expect(session.info.status).toBe('idle');
    const first = await session.send('hello there', { wait: 30, idempotencyKey: 'turn-1' });
    expect(first.finished).toBe(true);
    if (!first.finished) throw new Error('unreachable');
    expect(first.session.status).toBe('idle');
    expect(first.reply.text).toContain('hello there');
    expect(first.reply.messages.map((m) => m.info.role)).toEqual(['assistant']);
    // The same key and body: the first answer again, nothing new written.
    const replay = await session.send('hello there', { idempotencyKey: 'turn-1' });
    expect(replay.message.info.id).toBe(first.message.info.id);

    const second = await session.send('and again');
    expect(second.finished).toBe(false);
    const idle = await session.waitForIdle();
    expect(idle.status).toBe('idle');
    const history = await session.messages({ limit: 2, before: 100 });
    expect(history.view === 'log' && history.messages.map((m) => m.info.role)).toEqual(['user', 'assistant']);
  });

  it('resumes a cut event stream with Last-Event-ID and never yields an event twice', async () => {
    let cuts = 0;
    const lastEventIds: (string | null)[] = [];
    // A fetch whose event streams break after a few chunks, twice: the network dropping mid-turn.
    const flaky: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      const url = String(input);
      if (!url.endsWith('/events')) return res;
      lastEventIds.push(new Headers(init?.headers).get('last-event-id'));
      if (cuts >= 2 || !res.body) return res;
      cuts++;
      const reader = res.body.getReader();
      let chunks = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { value, done } = await reader.read();
          if (done || ++chunks > 4) {
            reader.cancel().catch(() => undefined);
            controller.error(new Error('connection reset'));
            return;
          }
          controller.enqueue(value);
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const flakyClient = createLoopline({ baseUrl: stack.url, apiKey, fetch: flaky });
    const session = await ll.sessions.create({ agent: 'helper' });
    await session.send('answer slowly please');
    const seen: StreamedEvent[] = [];
    for await (const item of flakyClient.sessions.get(session.id).events({ retryMs: 20 })) {
      seen.push(item);
      if (item.event.type === 'session.idle') break;
    }
    expect(cuts).toBe(2);
    expect(lastEventIds[0]).toBeNull();
    expect(lastEventIds.slice(1).every((id) => id !== null)).toBe(true);
    const ids = seen.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
    // Exactly the stream as one uninterrupted reader sees it.
    const whole: string[] = [];
    for await (const item of session.events()) {
      whole.push(item.id);
      if (item.event.type === 'session.idle') break;
    }
    expect(ids).toEqual(whole);
    const text = seen
      .flatMap((s) => (s.event.type === 'part.delta' && s.event.field === 'text' ? [s.event.delta] : []))
      .join('');
    expect(text).toBe('a slow answer that streams in many small pieces');
    // Resuming from an event id yields only what came after it.
    const after: string[] = [];
    for await (const item of session.events({ since: ids[2]! })) {
      after.push(item.id);
      if (item.event.type === 'session.idle') break;
    }
    expect(after).toEqual(ids.slice(3));
  });

  it('answers a client tool call with submitToolResults', async () => {
    const session = await ll.sessions.create({ agent: 'helper' });
    await session.send('pick a colour for me');
    const waiting = await session.waitForIdle();
    expect(waiting.status).toBe('waiting');
    const call = waiting.pendingToolCalls?.[0];
    expect(call).toMatchObject({ tool: 'pick_colour', input: { from: 'red,blue' } });
    await session.submitToolResults([{ callId: call!.callId, output: 'blue' }]);
    const done = await session.waitForIdle();
    expect(done.status).toBe('idle');
    const log = await session.messages();
    const tool =
      log.view === 'log' ? log.messages.flatMap((m) => m.parts).find((p) => p.type === 'tool') : undefined;
    expect(tool?.type === 'tool' && tool.state.status === 'completed' && tool.state.output).toBe('blue');
  });

  it('lists sessions by metadata, page by page', async () => {
    for (let i = 0; i < 3; i++) await ll.sessions.create({ agent: 'helper', metadata: { team: 'blue', i } });
    const found: number[] = [];
    for await (const s of ll.sessions.iterate({ metadata: { team: 'blue' }, limit: 2 }))
      found.push(s.metadata.i as number);
    expect(found).toEqual([2, 1, 0]);
  });

  it('deletes a running session with force (the turn is aborted first)', async () => {
    const session = await ll.sessions.create({ agent: 'helper' });
    await session.send('answer slowly again');
    for await (const { event } of session.events()) if (event.type === 'part.delta') break;
    const refused = await session.delete().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(LooplineError);
    expect((refused as LooplineError).code).toBe('session_busy');
    const deleted = await session.delete({ force: true });
    expect(deleted.sessionIds).toEqual([session.id]);
    const gone = await session.get().catch((err: unknown) => err);
    expect(gone).toBeInstanceOf(LooplineError);
    expect(gone).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('pages agents and tools by name; a bad page size is a typed 400', async () => {
    for (const name of ['pager_a', 'pager_b', 'pager_c'])
      await ll.agents.put(name, { model: 'compatible/mock' });
    const all = (await ll.agents.list()).map((a) => a.name);
    const walked: string[] = [];
    let cursor: string | null | undefined;
    do {
      const page = await ll.agents.page({ limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.agents.length).toBeLessThanOrEqual(2);
      walked.push(...page.agents.map((a) => a.name));
      cursor = page.nextCursor;
    } while (cursor);
    expect(walked).toEqual(all);
    const tools = await ll.tools.page({ limit: 1 });
    expect(tools.tools.map((t) => t.name)).toEqual(['pick_colour']);
    expect(tools.nextCursor).toBeNull(); // the page ended on the last tool
    expect(await ll.tools.page({ cursor: 'pick_colour' })).toEqual({ tools: [], nextCursor: null });
    await expect(ll.agents.page({ limit: 0 })).rejects.toMatchObject({
      status: 400,
      code: 'validation_error',
    });
  });

  it('throws typed errors carrying the problem body', async () => {
    const err = await ll.agents.put('bad name!', { model: 'compatible/mock' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LooplineError);
    expect(err).toMatchObject({ status: 400, code: 'validation_error' });
    expect((err as LooplineError).details).toBeDefined();
    const unauthorized = createLoopline({ baseUrl: stack.url, apiKey: 'nope' });
    await expect(unauthorized.agents.list()).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
  });
});
