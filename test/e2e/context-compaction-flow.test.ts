import { readEvents } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';
import {
  bigTurn,
  CONTINUE,
  compactions,
  defineBig,
  isSummary,
  liveText,
  log,
  markerOf,
  NO_PRUNE,
  SUMMARY_SYSTEM,
  summaryRule,
  WHOLE_OUTPUTS,
} from './context-fixtures.ts';

// Compaction that respects the turn and the log, end to end (docs/context.md "Summary
// compaction", "Revert", "Errors in the log"): turn errors recorded in the log, a manual
// compaction mid-turn that hands the turn back, input held during a compaction and delivered as
// what it is, recorded no-ops, atomic summary attempts, one record per compaction with its
// request count, and oversized input refused up front. Real Redis/PostgreSQL, the mock model
// over HTTP; "arrives during a compaction" is a racepoint that holds the compaction before its
// commit until the test releases it.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant();
  await defineBig(client, stack);
  const schema = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } as const;
  await client.tool('pick', { kind: 'client', description: 'Ask the user to pick', inputSchema: schema });
  // Tests of the compaction itself: whole outputs, prune off (with it, prune alone makes room).
  await client.agent('small', {
    tools: ['big'],
    limits: { context: 8000, output: 1000 },
    ...WHOLE_OUTPUTS,
    compaction: NO_PRUNE,
  });
  await client.tool('slow', {
    kind: 'webhook',
    description: 'a slow tool',
    inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
    url: `${stack.tools.url}/slow`,
    timeoutMs: 20_000,
  });
  await client.agent('asker', { tools: ['big', 'pick', 'slow'] });
  await client.agent('plain', {});
  await client.agent('bg', {
    tools: ['big'],
    limits: { context: 8000, output: 1000 },
    ...WHOLE_OUTPUTS,
    compaction: { ...NO_PRUNE, backgroundDelayMs: 200 },
  });
});
afterAll(() => stack?.close());

/** Holds the named racepoint until release(); `reached` turns true when a job got there. */
function holdAt(name: string) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const state = { reached: false, release: () => release() };
  stack.deps.racepoint = async (point) => {
    if (point !== name) return;
    state.reached = true;
    await gate;
  };
  return state;
}

const userTexts = (call: { messages: Array<{ role: string; text: string }> }) =>
  call.messages.filter((m) => m.role === 'user').map((m) => m.text);

describe('errors in the log', () => {
  it('records the error that ended a turn in messages, events and the inspector; never in the model view', async () => {
    stack.mock.setScenario({
      rules: [
        {
          when: { lastUserIncludes: 'break please', lastMessageRole: 'user' },
          reply: {
            fault: 'http',
            status: 400,
            body: JSON.stringify({
              error: { message: 'Unsupported param: frobnicate', type: 'invalid_request_error' },
            }),
          },
        },
        { when: { lastUserIncludes: 'hello again', lastMessageRole: 'user' }, reply: { text: 'hi there' } },
      ],
    });
    const id = await client.session('plain');
    await client.send(id, 'break please');
    const failed = await client.waitIdle(id);
    expect(failed.status).toBe('error');

    const messages = await log(client, id);
    const record = messages.at(-1);
    expect(record.info).toMatchObject({ role: 'assistant', finish: 'error' });
    expect(record.info.error.name).toBe('APIError');
    expect(record.info.error.message).toContain('frobnicate');
    expect(record.info.error.data.retryable).toBe(false);
    expect(messages.filter((m) => m.info.error)).toHaveLength(1);

    const events = (await readEvents(stack.deps.redis, stack.deps.keys, id, '0', 1)).map((e) => e.event);
    expect(
      events.some(
        (e) =>
          e.type === 'message.updated' &&
          e.message.id === record.info.id &&
          e.message.role === 'assistant' &&
          e.message.finish === 'error',
      ),
    ).toBe(true);
    expect(events.find((e) => e.type === 'session.error')).toMatchObject({
      error: { name: 'APIError', data: { retryable: false } },
    });

    const inspected = await fetch(`${stack.url}/v1/admin/sessions/${id}/inspect`, {
      headers: { authorization: `Bearer ${stack.operatorToken}` },
    }).then((r) => r.json() as Promise<any>);
    expect(inspected.messages.find((m: any) => m.info.id === record.info.id).info.error.name).toBe(
      'APIError',
    );

    expect(JSON.stringify((await client.history(id, 'model')).messages)).not.toContain('frobnicate');

    // The next message clears the session's error; the record stays in the log, and the model never sees it.
    const before = stack.mock.calls.length;
    await client.send(id, 'hello again');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    expect(s.error ?? null).toBeNull();
    const after = await log(client, id);
    expect(after.some((m) => m.info.id === record.info.id && m.info.finish === 'error')).toBe(true);
    expect(liveText(after.at(-1))).toBe('hi there');
    const calls = stack.mock.calls.slice(before);
    expect(JSON.stringify(calls.map((c) => c.messages))).not.toContain('frobnicate');
  });
});

describe('manual compaction mid-turn', () => {
  it('runs at the next step boundary, reads a client result sent meanwhile, and continues the turn', async () => {
    stack.mock.setScenario({
      rules: [
        summaryRule,
        // A listing first (something worth summarising), then the question to the client.
        {
          when: { lastUserIncludes: 'choose one', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'big', arguments: { lines: 100, tag: 'c1' } }] },
        },
        {
          when: { toolResultIncludes: '[c1]' },
          reply: { toolCalls: [{ name: 'pick', arguments: { q: 'colour' } }] },
        },
        {
          when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' },
          reply: { text: 'carrying on after the compaction' },
        },
      ],
    });
    const id = await client.session('asker');
    await client.send(id, 'please choose one');
    const waiting = await until('waiting on the client tool', async () => {
      const s = (await client.call('GET', `/v1/sessions/${id}`)).body;
      return s.status === 'waiting' && s.pendingToolCalls.length > 0 ? s : undefined;
    });
    const compact = await client.call('POST', `/v1/sessions/${id}/compact`, {});
    expect(compact.status).toBe(202);
    const answered = await client.call('POST', `/v1/sessions/${id}/tool-results`, {
      results: [{ callId: waiting.pendingToolCalls[0].callId, output: 'ultramarine-blue' }],
    });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);

    const before = stack.mock.calls.length;
    const s = await until('the turn finished after the compaction', async () => {
      const cur = (await client.call('GET', `/v1/sessions/${id}`)).body;
      return cur.status === 'idle' || cur.status === 'error' ? cur : undefined;
    });
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
    expect(s.compaction.count).toBe(1);

    const messages = await log(client, id);
    const marker = messages.find((m) => markerOf(m));
    expect(markerOf(marker)).toMatchObject({ auto: false });
    const summary = messages.find(isSummary);
    expect(summary.info.finish).toBe('stop');
    // The continue message follows the summary, and the model's final answer follows it.
    const cont = messages.find((m) => m.info.role === 'user' && liveText(m).includes(CONTINUE));
    expect(cont).toBeDefined();
    expect(cont.info.seq).toBeGreaterThan(marker.info.seq);
    expect(messages.at(-1).info).toMatchObject({ role: 'assistant', finish: 'stop' });
    expect(liveText(messages.at(-1))).toBe('carrying on after the compaction');
    // The model read the client's answer: in the summary it was given, or verbatim.
    const last = stack.mock.calls
      .slice(before)
      .filter((c) => !c.system.includes(SUMMARY_SYSTEM))
      .at(-1)!;
    expect(JSON.stringify(last.messages)).toContain('ultramarine-blue');
    const rows = await compactions(stack, id);
    expect(rows).toMatchObject([{ status: 'completed', reason: 'manual', requests: 1 }]);
  });
});

describe('manual compaction while a step runs', () => {
  it('waits for the step, compacts, then the turn goes on to its answer', async () => {
    stack.mock.setScenario({
      rules: [
        summaryRule,
        {
          when: { lastUserIncludes: 'go slowly', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'big', arguments: { lines: 100, tag: 's1' } }] },
        },
        {
          when: { toolResultIncludes: '[s1]' },
          reply: { toolCalls: [{ name: 'slow', arguments: { ms: 1500 } }] },
        },
        {
          when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' },
          reply: { text: 'finished the slow work' },
        },
      ],
    });
    const id = await client.session('asker');
    await client.send(id, 'go slowly');
    await until('the slow tool running', async () => {
      const msgs = await log(client, id);
      return msgs.some((m) =>
        m.parts.some((p: any) => p.type === 'tool' && p.tool === 'slow' && p.state.status === 'running'),
      );
    });
    expect((await client.call('GET', `/v1/sessions/${id}`)).body.status).toBe('running');
    expect((await client.call('POST', `/v1/sessions/${id}/compact`, {})).status).toBe(202);
    const s = await client.waitIdle(id, 30_000);
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
    expect(s.compaction.count).toBe(1);
    const messages = await log(client, id);
    const slow = messages.find((m) => m.parts.some((p: any) => p.type === 'tool' && p.tool === 'slow'));
    const marker = messages.find((m) => markerOf(m));
    // The step that was running finished first: its tool completed, then the compaction ran.
    expect(slow.parts.find((p: any) => p.tool === 'slow').state.status).toBe('completed');
    expect(marker.info.midRun).toBe(true);
    expect(messages.some((m) => m.info.role === 'user' && liveText(m).includes(CONTINUE))).toBe(true);
    expect(liveText(messages.at(-1))).toBe('finished the slow work');
  });
});

describe('input during a compaction', () => {
  it('holds a message sent during a background compaction and delivers it as a new turn, not a steer', async () => {
    stack.mock.setScenario({
      rules: [
        summaryRule,
        ...bigTurn('first', ['b1'], 150, 'first done'),
        ...bigTurn('second', ['b2'], 150, 'second done'),
        ...bigTurn('third', ['b3'], 130, 'third done'),
        {
          when: { lastUserIncludes: 'a fresh question', lastMessageRole: 'user' },
          reply: { text: 'fresh answer' },
        },
      ],
    });
    const hold = holdAt('compaction:before-commit');
    try {
      const id = await client.session('bg');
      for (const text of ['first task', 'second task', 'third task']) {
        await client.send(id, text);
        expect((await client.waitIdle(id)).status).toBe('idle');
      }
      await until('the background compaction holds before its commit', () => hold.reached, 15_000);
      expect((await client.call('GET', `/v1/sessions/${id}`)).body.status).toBe('compacting');
      const sent = await client.send(id, 'a fresh question');
      const before = stack.mock.calls.length;
      hold.release();
      const s = await until('the new turn answered', async () => {
        const msgs = await log(client, id);
        return liveText(msgs.at(-1)) === 'fresh answer' ? await client.waitIdle(id) : undefined;
      });
      expect(s.status).toBe('idle');

      const messages = await log(client, id);
      const msg = messages.find((m) => m.info.id === sent.message.info.id);
      expect(msg.info.midRun).toBeUndefined();
      expect(msg.info.seq).toBeGreaterThan(messages.find((m) => markerOf(m)).info.seq);
      const rows = await compactions(stack, id);
      expect(rows).toMatchObject([{ status: 'completed', reason: 'background' }]);
      // The model got it as the user wrote it: no steer wrapper, after the summary.
      const call = stack.mock.calls
        .slice(before)
        .find((c) => userTexts(c).some((t) => t.includes('a fresh question')))!;
      const text = userTexts(call).find((t) => t.includes('a fresh question'))!;
      expect(text).toBe('a fresh question');
      expect(JSON.stringify(call.messages)).not.toContain('system-reminder');
    } finally {
      stack.deps.racepoint = undefined;
    }
  });

  it('steers a message sent during a mid-turn compaction into the running turn, as without one', async () => {
    stack.mock.setScenario({
      rules: [
        summaryRule,
        ...bigTurn('first', ['t1'], 100, 'first done'),
        ...bigTurn('second', ['t2'], 100, 'second done'),
        ...bigTurn('third', ['t3a', 't3b', 't3c', 't3d', 't3e', 't3f'], 100, 'third done'),
        {
          when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' },
          reply: { text: 'continued: all done' },
        },
      ],
    });
    const hold = holdAt('compaction:before-commit');
    try {
      const id = await client.session('small');
      for (const text of ['first task', 'second task']) {
        await client.send(id, text);
        expect((await client.waitIdle(id)).status).toBe('idle');
      }
      await client.send(id, 'third task');
      await until('the automatic compaction holds before its commit', () => hold.reached, 20_000);
      const sent = await client.send(id, 'also mention the colour');
      hold.release();
      const s = await client.waitIdle(id, 30_000);
      expect(s.status, JSON.stringify(s.error)).toBe('idle');
      const messages = await log(client, id);
      expect(messages.find((m) => m.info.id === sent.message.info.id).info.midRun).toBe(true);
      const steered = stack.mock.calls.find((c) =>
        userTexts(c).some((t) => t.includes('also mention the colour') && t.includes('system-reminder')),
      );
      expect(steered).toBeDefined();
    } finally {
      stack.deps.racepoint = undefined;
    }
  });
});

describe('compactions that cannot help are recorded no-ops', () => {
  it('POST /compact on an empty session changes nothing and makes no model call', async () => {
    stack.mock.setScenario({ rules: [summaryRule] });
    const id = await client.session('plain');
    const before = stack.mock.calls.length;
    expect((await client.call('POST', `/v1/sessions/${id}/compact`, {})).status).toBe(202);
    const rows = await until('the no-op record', async () => {
      const r = await compactions(stack, id);
      return r.length > 0 && r[0]!.status !== 'running' ? r : undefined;
    });
    expect(rows).toMatchObject([{ status: 'noop', reason: 'manual', requests: 0 }]);
    expect(rows[0]!.tokens_after).toBe(rows[0]!.tokens_before);
    expect((rows[0]!.error as any).name).toBe('CompactionNoopError');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    expect(s.compaction.count).toBe(0);
    expect(stack.mock.calls.length).toBe(before);
    const messages = await log(client, id);
    expect(messages.filter(isSummary)).toHaveLength(0);
    expect(markerOf(messages[0])).toMatchObject({ noop: true });
    expect((await client.history(id, 'model')).messages).toEqual([]);
  });

  it('a summary that would grow the context is not applied: recorded, the session goes on', async () => {
    stack.mock.setScenario({
      rules: [
        summaryRule,
        { when: { lastUserIncludes: 'and now', lastMessageRole: 'user' }, reply: { text: 'fine' } },
      ],
    });
    const id = await client.session('plain');
    await client.send(id, 'hi');
    await client.waitIdle(id);
    const view = (await client.history(id, 'model')).messages;
    const before = stack.mock.calls.length;
    // Two words of history: any summary of them is longer than they are.
    await client.call('POST', `/v1/sessions/${id}/compact`, {});
    const rows = await until('the record', async () => {
      const r = await compactions(stack, id);
      return r.length > 0 && r[0]!.status !== 'running' ? r : undefined;
    });
    expect(rows).toMatchObject([{ status: 'noop', reason: 'manual', requests: 1 }]);
    expect(stack.mock.calls.length).toBe(before + 1);
    expect((await client.waitIdle(id)).compaction.count).toBe(0);
    const messages = await log(client, id);
    const summary = messages.find(isSummary);
    expect(summary.info.error.name).toBe('CompactionNoopError');
    expect(summary.info.finish).toBeUndefined();
    expect(liveText(summary)).toBe('');
    expect((await client.history(id, 'model')).messages).toEqual(view);
    // No dead end: the next turn runs as usual.
    await client.send(id, 'and now?');
    const s = await client.waitIdle(id);
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
    expect(liveText((await log(client, id)).at(-1))).toBe('fine');

    // A late re-run of the compaction job (BullMQ lost its completion) after the session moved on:
    // the point is closed, so no second run is recorded (none is left `running`) and no model call.
    const calls = stack.mock.calls.length;
    const marker = messages.find((m) => markerOf(m));
    const rerun = `compact-${id}-${marker.info.id}-late`;
    await stack.deps.queues.add(
      'compact',
      rerun,
      { tenantId: client.tenantId, sessionId: id, messageId: marker.info.id },
      { priority: 1 },
    );
    const job = await stack.deps.queues.compact.getJob(rerun);
    await until('the late compaction job', async () => (await job!.getState()) === 'completed');
    expect((await compactions(stack, id)).map((r) => r.status)).toEqual(['noop']);
    expect(stack.mock.calls.length).toBe(calls);
    expect((await client.waitIdle(id)).status).toBe('idle');
  });

  it('a repeated /compact with nothing new since the last summary is a no-op', async () => {
    stack.mock.setScenario({ rules: [summaryRule, ...bigTurn('first', ['r1'], 100, 'first done')] });
    const id = await client.session('small');
    await client.send(id, 'first task');
    await client.waitIdle(id);
    await client.call('POST', `/v1/sessions/${id}/compact`, {});
    await until('the first compaction', async () => (await client.waitIdle(id)).compaction.count === 1);
    const view = (await client.history(id, 'model')).messages;
    const before = stack.mock.calls.length;
    await client.call('POST', `/v1/sessions/${id}/compact`, {});
    const rows = await until('the second record', async () => {
      const r = await compactions(stack, id);
      return r.length === 2 && r[1]!.status !== 'running' ? r : undefined;
    });
    expect(rows.map((r) => r.status)).toEqual(['completed', 'noop']);
    expect((await client.waitIdle(id)).compaction.count).toBe(1);
    expect(stack.mock.calls.length).toBe(before);
    expect((await client.history(id, 'model')).messages).toEqual(view);
  });
});

describe('summary attempts are atomic', () => {
  it('leaves no text of failed attempts in the log, the summary or the model view', async () => {
    stack.mock.setScenario({
      rules: [
        // Every summary attempt streams a little and then the connection drops.
        {
          when: { system: SUMMARY_SYSTEM },
          reply: {
            fault: 'cut-stream',
            afterChunks: 3,
            text: 'LEAKED partial summary words that must vanish',
          },
        },
        ...bigTurn('first', ['t1'], 100, 'first done'),
        ...bigTurn('second', ['t2'], 100, 'second done'),
        ...bigTurn('third', ['t3a', 't3b', 't3c', 't3d', 't3e', 't3f'], 100, 'third done'),
        {
          when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' },
          reply: { text: 'continued: all done' },
        },
      ],
    });
    const id = await client.session('small');
    for (const text of ['first task', 'second task', 'third task']) {
      await client.send(id, text);
      const s = await client.waitIdle(id, 40_000);
      expect(s.status, JSON.stringify(s.error)).toBe('idle');
    }
    const rows = await compactions(stack, id);
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows[0]).toMatchObject({ status: 'completed', rung: 'structural' });
    // One compaction, its three attempts counted on the one record.
    expect(rows[0]!.requests).toBe(3);
    const messages = await log(client, id);
    expect(JSON.stringify(messages)).not.toContain('LEAKED');
    const summary = messages.find(isSummary);
    expect(summary.parts.filter((p: any) => p.type === 'text' && !p.ignored)).toHaveLength(1);
    expect(liveText(summary)).toContain('## Last user request');
    expect(JSON.stringify((await client.history(id, 'model')).messages)).not.toContain('LEAKED');
  });
});

describe('records', () => {
  it('a chunked compaction is one record with every request counted', async () => {
    stack.mock.setScenario({
      rules: [
        { when: { system: SUMMARY_SYSTEM }, reply: { fault: 'context-length' }, times: 3 },
        summaryRule,
        ...bigTurn('first', ['t1'], 100, 'first done'),
        ...bigTurn('second', ['t2'], 100, 'second done'),
        ...bigTurn('third', ['t3a', 't3b', 't3c', 't3d', 't3e', 't3f'], 100, 'third done'),
        {
          when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' },
          reply: { text: 'continued: all done' },
        },
      ],
    });
    const before = stack.mock.calls.length;
    const id = await client.session('small');
    for (const text of ['first task', 'second task', 'third task']) {
      await client.send(id, text);
      expect((await client.waitIdle(id, 40_000)).status).toBe('idle');
    }
    const summaryCalls = stack.mock.calls.slice(before).filter((c) => c.system.includes(SUMMARY_SYSTEM));
    const rows = await compactions(stack, id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'completed', rung: 'chunked', requests: summaryCalls.length });
    const api = (await client.call('GET', `/v1/sessions/${id}/context`)).body;
    expect(api.compactions).toHaveLength(1);
    expect(api.compactions[0]).toMatchObject({
      rung: 'chunked',
      status: 'completed',
      requests: summaryCalls.length,
    });
    expect(api.compactions[0].tokensAfter).toBeLessThan(api.compactions[0].tokensBefore);
    expect(api.compactions[0].durationMs).toBeGreaterThanOrEqual(0);
  });
});

describe('oversized input', () => {
  it('refuses a message the window could never hold with 413, storing nothing', async () => {
    await client.agent('tiny', { limits: { context: 2048, output: 256 } });
    const id = await client.session('tiny');
    const huge = 'lorem ipsum dolor sit amet '.repeat(500);
    const res = await client.call('POST', `/v1/sessions/${id}/messages`, { text: huge });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('input_too_large');
    expect(res.body.error.details.tokens).toBeGreaterThan(res.body.error.details.room);
    expect(await log(client, id)).toEqual([]);
    // A message that fits is taken as usual.
    stack.mock.setScenario({ rules: [{ when: {}, reply: { text: 'ok' } }] });
    await client.send(id, 'lorem ipsum '.repeat(100));
    expect((await client.waitIdle(id)).status).toBe('idle');
  });
});
