import { readEvents } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionQuiet } from '../support/jobs.ts';
import { type Client, type Stack, startStack, untilStreamed } from '../support/stack.ts';
import { until } from '../support/wait.ts';
import { bigTurn, compactions, defineBig, isSummary, markerOf, SUMMARY_SYSTEM } from './context-fixtures.ts';

// Abort: POST /v1/sessions/:id/abort stops a streaming model call or a running
// webhook within a second, keeps what was streamed, marks unfinished tools interrupted and leaves
// the session idle and consistent; an abort of a queued session is recorded durably and stops it
// when its job runs; an idle session is a 200 no-op. An abort during a summary compaction stops
// its model call too: no half summary, the compaction record failed, the session idle. An abort
// during the prune pass before a compaction (prune jobs are not cancelled) stops the compaction
// from running afterwards, whichever of the two gets the session first.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        // Summary requests (the compaction agent's system prompt): the first one asked for with
        // SLOW-SUMMARY in its instructions streams for ~8 s; every other summary is immediate.
        {
          when: { system: SUMMARY_SYSTEM, lastUserIncludes: 'SLOW-SUMMARY' },
          reply: { text: 'summary line. '.repeat(80), chunks: 80 },
          latencyMs: 100,
          times: 1,
        },
        { when: { system: SUMMARY_SYSTEM }, reply: { summary: true } },
        {
          when: { lastUserIncludes: 'slow story', lastMessageRole: 'user' },
          reply: { text: 'word '.repeat(60), chunks: 60 },
          latencyMs: 100,
        },
        {
          when: { lastUserIncludes: 'slow tool', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'slow', arguments: { ms: 8000 } }] },
        },
        // Six ~1,250-token tool outputs: past the `tight` agent's 7,000-token trigger mid-turn.
        ...bigTurn('big listing', ['b1', 'b2', 'b3', 'b4', 'b5', 'b6'], 100, 'listing done'),
      ],
    },
  });
  client = await stack.tenant();
  await client.tool('slow', {
    kind: 'webhook',
    description: 'a slow tool',
    inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
    url: `${stack.tools.url}/slow`,
    timeoutMs: 20_000,
  });
  await client.agent('writer', { tools: ['slow'] });
  await defineBig(client, stack);
  // Prune frees nothing (every output protected): a compaction is needed after the prune pass.
  await client.agent('tight', {
    tools: ['big'],
    limits: { context: 8000, output: 1000 },
    compaction: { pruneProtect: 1_000_000 },
  });
});
afterAll(() => stack?.close());

const abort = (id: string) => client.call('POST', `/v1/sessions/${id}/abort`);

/**
 * Waits until the session is idle. The streams, tool and summary these tests abort would run 6–8 s
 * more; that the abort cut them is asserted on what was written (a partial text, an interrupted
 * tool, an unfinished summary), not on how long it took.
 */
const untilIdle = (id: string) =>
  until('idle', async () => (await client.call('GET', `/v1/sessions/${id}`)).body.status === 'idle');

/** Waits until no job of the session is left to run: from then on nothing can call the model. */
const untilQuiet = (id: string) =>
  until('no job of the session left', () => sessionQuiet(stack.deps.queues, id));

const streamedText = (id: string) => untilStreamed(client, id);

describe('abort', () => {
  it('during a slow stream: the stream is cut short, the streamed text kept, AbortedError', async () => {
    const id = await client.session('writer');
    await client.send(id, 'tell me a slow story');
    // Streaming: the text part exists and deltas are arriving.
    await until('streaming', async () => {
      const log = await client.history(id);
      return log.messages.some(
        (m: any) => m.info.role === 'assistant' && m.parts.some((p: any) => p.type === 'text'),
      );
    });
    await streamedText(id);
    const calls = stack.mock.calls.length;
    const res = await abort(id);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ aborted: true, sessionIds: [id], session: { id, status: 'running' } });
    await untilIdle(id);

    const log = await client.history(id);
    expect(log.messages.map((m: any) => m.info.role)).toEqual(['user', 'assistant']);
    const reply = log.messages[1];
    expect(reply.info.error.name).toBe('AbortedError');
    const text = reply.parts.find((p: any) => p.type === 'text').text;
    expect(text.length).toBeGreaterThan(0);
    expect(text.length).toBeLessThan('word '.repeat(60).length);
    // Every delta streamed before the abort was published, once and in order, before the reply's
    // AbortedError: the deltas that were lingering (20 ms, stream-recorder.ts) when the abort cut
    // the stream went out with it, so a client's live text is the stored text.
    const events = (await readEvents(stack.deps.redis, stack.deps.keys, id, '0', undefined, 10_000)).map(
      (e) => e.event,
    );
    const textPart = reply.parts.find((p: any) => p.type === 'text');
    const streamed = events.flatMap((e) =>
      e.type === 'part.delta' && e.partId === textPart.id ? [e.delta] : [],
    );
    expect(streamed.join('')).toBe(text);
    const aborted = events.findIndex(
      (e) =>
        e.type === 'message.updated' &&
        e.message.id === reply.info.id &&
        e.message.role === 'assistant' &&
        e.message.error !== undefined,
    );
    const lastDelta = events.findLastIndex((e) => e.type === 'part.delta' && e.partId === textPart.id);
    expect(aborted).toBeGreaterThan(lastDelta);
    // The partial reply stays in the model view (abort-like errors with real content).
    const view = await client.history(id, 'model');
    expect(JSON.stringify(view.messages)).toContain(text.trim());
    // The loop stays stopped: no job of the session is left, and no model call was made.
    await untilQuiet(id);
    expect(stack.mock.calls.length).toBe(calls);
    expect((await client.call('GET', `/v1/sessions/${id}`)).body).toMatchObject({
      status: 'idle',
      error: null,
    });

    // A new message starts a new turn, answered normally, with the partial reply in its context.
    await client.send(id, 'now something short');
    await client.waitIdle(id);
    const after = await client.history(id);
    expect(after.messages.at(-1).info.finish).toBe('stop');
    expect(JSON.stringify(stack.mock.calls.at(-1)!.messages)).toContain(text.trim());
  });

  it('during a slow webhook tool: the tool interrupted before it ended, never re-run', async () => {
    const id = await client.session('writer');
    await client.send(id, 'run the slow tool');
    const callId = await until('tool running', async () => {
      const log = await client.history(id);
      const part = log.messages.flatMap((m: any) => m.parts).find((p: any) => p.type === 'tool');
      return part?.state.status === 'running' ? (part.callId as string) : undefined;
    });
    await until('webhook reached', async () => stack.tools.calls.get(callId) === 1);
    const res = await abort(id);
    expect(res.status).toBe(202);
    await untilIdle(id);
    const log = await client.history(id);
    const part = log.messages.flatMap((m: any) => m.parts).find((p: any) => p.type === 'tool');
    expect(part.state).toMatchObject({ status: 'error', interrupted: true });
    expect(log.messages.at(-1).info.error.name).toBe('AbortedError');
    // The reply holds a tool call: it stays in the model view with the interrupted placeholder.
    const view = JSON.stringify((await client.history(id, 'model')).messages);
    expect(view).toContain('[Tool execution was interrupted]');
    await untilQuiet(id);
    expect(stack.tools.calls.get(callId)).toBe(1);
  });

  it('while queued (no job running yet): recorded durably, the turn never calls the model', async () => {
    await stack.stopWorkers();
    try {
      const id = await client.session('writer');
      await client.send(id, 'tell me a slow story, later');
      expect((await client.call('GET', `/v1/sessions/${id}`)).body.status).toBe('queued');
      const res = await abort(id);
      expect(res.status).toBe(202);
      expect(res.body.session.status).toBe('queued');
      const row = await stack.deps.db
        .selectFrom('sessions')
        .select(['abort_requested_seq', 'last_seq'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(row.abort_requested_seq).toBe(row.last_seq);
      const calls = stack.mock.calls.length;

      stack.startWorkers();
      const s = await client.waitIdle(id, 10_000);
      expect(s.status).toBe('idle');
      await untilQuiet(id);
      expect(stack.mock.calls.length).toBe(calls);
      const log = await client.history(id);
      expect(log.messages.map((m: any) => m.info.role)).toEqual(['user', 'assistant']);
      expect(log.messages[1].info.error.name).toBe('AbortedError');
      expect(log.messages[1].parts).toEqual([]);
      const cleared = await stack.deps.db
        .selectFrom('sessions')
        .select('abort_requested_seq')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(cleared.abort_requested_seq).toBeNull();

      // The empty marker is not in the model view; a new message is answered, seeing both requests.
      await client.send(id, 'and now a short one');
      await client.waitIdle(id);
      const sent = JSON.stringify(stack.mock.calls.at(-1)!.messages);
      expect(sent).toContain('tell me a slow story, later');
      expect(sent).toContain('and now a short one');
    } finally {
      if (stack.workers.length === 0 || !(await stack.workers[0]!.isRunning())) stack.startWorkers();
    }
  });

  it('a message sent after the abort (before it was consumed) starts a new turn', async () => {
    await stack.stopWorkers();
    try {
      const id = await client.session('writer');
      await client.send(id, 'first request');
      expect((await abort(id)).status).toBe(202);
      await client.send(id, 'second request');
      stack.startWorkers();
      await until('answered', async () => {
        const log = await client.history(id);
        return log.messages.at(-1)?.info.finish === 'stop';
      });
      await client.waitIdle(id);
      const log = await client.history(id);
      expect(log.messages.map((m: any) => m.info.role)).toEqual(['user', 'user', 'assistant']);
      expect(JSON.stringify(stack.mock.calls.at(-1)!.messages)).toContain('second request');
    } finally {
      if (!(await stack.workers[0]!.isRunning())) stack.startWorkers();
    }
  });

  it('during a summary compaction: the summary call stops unfinished, no half summary', async () => {
    const id = await client.session('writer');
    // Long enough that a summary shrinks it (a compaction that would not is a recorded no-op).
    const padding = ' lorem ipsum dolor sit amet'.repeat(150);
    for (const text of ['first question', 'second question']) {
      await client.send(id, `${text}${padding}`);
      await client.waitIdle(id);
    }
    const compact = await client.call('POST', `/v1/sessions/${id}/compact`, { instructions: 'SLOW-SUMMARY' });
    expect(compact.status).toBe(202);
    await until('summary streaming', async () => {
      const log = await client.history(id);
      return log.messages.some((m: any) => isSummary(m) && m.parts.some((p: any) => p.type === 'text'));
    });
    const calls = stack.mock.calls.length;
    const res = await abort(id);
    expect(res.status).toBe(202);
    expect(res.body.session.status).toBe('compacting');
    // The summary had ~7 s to go: it ends unfinished (below), so its model call was stopped.
    await untilIdle(id);

    const log = await client.history(id);
    const summary = log.messages.find(isSummary);
    expect(summary.info.error.name).toBe('AbortedError');
    expect(summary.info.finish).toBeUndefined();
    const texts = summary.parts.filter((p: any) => p.type === 'text');
    expect(texts.length).toBeGreaterThan(0);
    expect(texts.every((p: any) => p.ignored === true)).toBe(true);
    // The turn is closed with an empty aborted reply; the half summary is no boundary.
    expect(log.messages.at(-1).info).toMatchObject({ role: 'assistant', error: { name: 'AbortedError' } });
    const view = await client.history(id, 'model');
    expect(JSON.stringify(view.messages)).not.toContain('summary line.');
    expect(await compactions(stack, id)).toMatchObject([
      { status: 'failed', reason: 'manual', error: { name: 'AbortedError' } },
    ]);
    const ledger = await stack.deps.db
      .selectFrom('steps')
      .select(['kind', 'outcome'])
      .where('session_id', '=', id)
      .where('kind', '=', 'compaction')
      .execute();
    expect(ledger).toEqual([{ kind: 'compaction', outcome: 'aborted' }]);
    const session = (await client.call('GET', `/v1/sessions/${id}`)).body;
    expect(session).toMatchObject({ status: 'idle', error: null, compaction: { count: 0 } });
    await untilQuiet(id);
    expect(stack.mock.calls.length).toBe(calls);

    // The compaction point is still pending: the next message runs it again (the one summary
    // message is reused and completed), then answers.
    await client.send(id, 'third question');
    const after = await client.waitIdle(id);
    expect(after).toMatchObject({ status: 'idle', compaction: { count: 1 } });
    const rows = await compactions(stack, id);
    expect(rows.map((r) => r.status)).toEqual(['failed', 'completed']);
    const final = await client.history(id);
    const summaries = final.messages.filter(isSummary);
    expect(summaries).toHaveLength(1);
    expect(summaries[0].info.finish).toBe('stop');
    expect(summaries[0].info.error).toBeUndefined();
    expect(final.messages.at(-1).info.finish).toBe('stop');
  });

  /** Summary model calls so far. */
  const summaryCalls = () =>
    stack.mock.calls.filter((c) => JSON.stringify(c).includes(SUMMARY_SYSTEM)).length;

  /** After the abort: idle, no summary call, no compaction; the next message compacts, then answers. */
  async function stoppedBeforeCompaction(id: string, summaries: number) {
    await client.waitIdle(id, 10_000);
    await untilQuiet(id);
    expect(summaryCalls()).toBe(summaries);
    expect(await compactions(stack, id)).toEqual([]);
    const log = await client.history(id);
    expect(log.messages.filter(isSummary)).toEqual([]);
    expect(log.messages.at(-1).info).toMatchObject({ role: 'assistant', error: { name: 'AbortedError' } });
    expect((await client.call('GET', `/v1/sessions/${id}`)).body).toMatchObject({
      status: 'idle',
      error: null,
    });
    return log;
  }

  it('during the prune pass before a compaction: the turn ends there, no compaction point, no summary', async () => {
    const id = await client.session('tight');
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let reached = false;
    stack.deps.racepoint = async (name) => {
      if (name !== 'prune:before-compaction') return;
      reached = true;
      await held;
    };
    try {
      const summaries = summaryCalls();
      await client.send(id, 'big listing please');
      await until('the prune pass before the compaction', () => reached, 30_000);
      expect((await abort(id)).status).toBe(202);
      release();
      const log = await stoppedBeforeCompaction(id, summaries);
      expect(log.messages.filter((m: any) => markerOf(m))).toEqual([]);
    } finally {
      stack.deps.racepoint = undefined;
      release();
    }
  });

  it('after the prune set the compaction point, the abort ending the turn first: the compaction never runs', async () => {
    const id = await client.session('tight');
    // Paused for every worker (a worker's local pause may still take the job it is blocked on).
    const compactQueue = stack.deps.queues.compact;
    await compactQueue.pause();
    try {
      const summaries = summaryCalls();
      await client.send(id, 'big listing please');
      // The prune pass set the point and queued the compaction job, which nothing runs yet.
      await until(
        'the compaction point',
        async () => (await client.history(id)).messages.some((m: any) => markerOf(m)),
        30_000,
      );
      expect((await abort(id)).status).toBe(202);
      await client.waitIdle(id, 10_000);
      await compactQueue.resume();
      await until('the compaction job done', async () => {
        const jobs = await stack.deps.queues.compact.getJobs(['wait', 'prioritized', 'active', 'delayed']);
        return !jobs.some((j) => j?.data?.sessionId === id);
      });
      const log = await stoppedBeforeCompaction(id, summaries);
      expect(log.messages.filter((m: any) => markerOf(m))).toHaveLength(1);
    } finally {
      await compactQueue.resume();
    }
    // The point stays pending: the next message runs it, then is answered.
    await client.send(id, 'short answer now');
    expect(await client.waitIdle(id, 30_000)).toMatchObject({ status: 'idle', compaction: { count: 1 } });
    expect((await compactions(stack, id)).map((r) => r.status)).toEqual(['completed']);
  });

  it('an idle session: 200 no-op, nothing written; unknown session 404', async () => {
    const id = await client.session('writer');
    await client.send(id, 'hello');
    await client.waitIdle(id);
    await untilQuiet(id); // the idle prune pass writes too: the row is compared after it
    const row = () =>
      stack.deps.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const before = await row();
    const res = await abort(id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ aborted: false, sessionIds: [], session: { id, status: 'idle' } });
    expect(await row()).toEqual(before);
    expect((await abort('ses_does_not_exist')).status).toBe(404);
    const stranger = await stack.tenant('stranger');
    expect((await stranger.call('POST', `/v1/sessions/${id}/abort`)).status).toBe(404);
  });
});
