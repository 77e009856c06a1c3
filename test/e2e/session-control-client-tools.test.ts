import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionQuiet } from '../support/jobs.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// Client tools: a call to a `client` tool puts the session in `waiting` with the
// call in pendingToolCalls; POST …/tool-results answers it and the loop goes on. Bad requests are
// refused with nothing written; an optional timeoutMs turns an unanswered call into an error.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: 'choose one', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'pick', arguments: { q: 'file' } }] },
        },
        {
          when: { lastUserIncludes: 'choose two', lastMessageRole: 'user' },
          reply: {
            toolCalls: [
              { name: 'pick', arguments: { q: 'first' } },
              { name: 'pick', arguments: { q: 'second' } },
            ],
          },
        },
        {
          when: { lastUserIncludes: 'choose quickly', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'pick_fast', arguments: { q: 'hurry' } }] },
        },
      ],
    },
  });
  client = await stack.tenant();
  const schema = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } as const;
  await client.tool('pick', { kind: 'client', description: 'Ask the user to pick', inputSchema: schema });
  await client.tool('pick_fast', {
    kind: 'client',
    description: 'Ask the user, briefly',
    inputSchema: schema,
    timeoutMs: 300,
  });
  await client.agent('asker', { tools: ['pick', 'pick_fast'] });
});
afterAll(() => stack?.close());

async function waiting(id: string) {
  return until('session waiting', async () => {
    const s = (await client.call('GET', `/v1/sessions/${id}`)).body;
    return s.status === 'waiting' && s.pendingToolCalls.length > 0 ? s : undefined;
  });
}

/** Everything a refused request must leave untouched. */
async function snapshot(id: string) {
  const db = stack.deps.db;
  const session = await db
    .selectFrom('sessions')
    .select(['status', 'fence', 'last_seq', 'step_count', 'updated_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  const parts = await db
    .selectFrom('parts')
    .select(['id', 'data', 'tokens', 'updated_at'])
    .where('session_id', '=', id)
    .orderBy('seq')
    .execute();
  const outputs = await db.selectFrom('tool_outputs').select('id').where('session_id', '=', id).execute();
  const jobs = (await stack.deps.queues.step.getJobCounts()) as Record<string, number>;
  return { session, parts, outputs, jobs: jobs.waiting! + jobs.delayed! + jobs.prioritized! };
}

const post = (id: string, body: unknown) => client.call('POST', `/v1/sessions/${id}/tool-results`, body);

describe('client tools', () => {
  it('round trip: waiting with the pending call listed, answered, the loop goes on', async () => {
    const id = await client.session('asker');
    await client.send(id, 'please choose one');
    const s = await waiting(id);
    expect(s.statusDetail).toContain('client tool');
    expect(s.pendingToolCalls).toHaveLength(1);
    const [call] = s.pendingToolCalls;
    expect(call).toMatchObject({ tool: 'pick', input: { q: 'file' } });
    expect(new Date(call.createdAt).getTime()).toBeGreaterThan(0);
    expect(call.expiresAt).toBeUndefined();
    const calls = stack.mock.calls.length;
    await until('no job of the session left', () => sessionQuiet(stack.deps.queues, id));
    expect(stack.mock.calls.length).toBe(calls); // waiting: no model call

    const res = await post(id, { results: [{ callId: call.callId, output: 'report-2026.pdf' }] });
    expect(res.status).toBe(200);
    expect(res.body.session).toEqual({ id, status: 'queued' });
    expect(res.body.parts[0].state).toMatchObject({ status: 'completed', output: 'report-2026.pdf' });

    const done = await client.waitIdle(id);
    expect(done.pendingToolCalls).toEqual([]);
    expect(JSON.stringify(stack.mock.calls.at(-1)!.messages)).toContain('report-2026.pdf');
    const log = await client.history(id);
    const part = log.messages[1].parts.find((p: any) => p.type === 'tool');
    expect(part.state).toMatchObject({ status: 'completed', output: 'report-2026.pdf' });
    expect(log.messages.at(-1).info.finish).toBe('stop');
  });

  it('refuses bad requests with nothing written: 400, 404 unknown id, 409 answered twice, 409 not waiting', async () => {
    const id = await client.session('asker');
    await client.send(id, 'choose two files');
    const s = await waiting(id);
    const [first, second] = s.pendingToolCalls.map((c: any) => c.callId);
    expect(second).toBeDefined();
    const before = await snapshot(id);

    const bad: unknown[] = [
      {},
      { results: [] },
      { results: [{ callId: first }] }, // neither output nor error
      { results: [{ callId: first, output: 'a', error: 'b' }] }, // both
      {
        results: [
          { callId: first, output: 'a' },
          { callId: first, output: 'b' },
        ],
      }, // twice
      { results: [{ callId: first, output: 'a', extra: 1 }] },
      { results: [{ callId: first, output: 42 }] },
      { results: [{ callId: '', output: 'a' }] },
      { results: 'nope' },
    ];
    for (const body of bad) {
      const res = await post(id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_error');
    }
    const raw = await fetch(`${stack.url}/v1/sessions/${id}/tool-results`, {
      method: 'POST',
      headers: { authorization: `Bearer ${client.apiKey}`, 'content-type': 'application/json' },
      body: '{"results": [',
    });
    expect(raw.status).toBe(400);

    // An unknown id fails the whole request: the valid result beside it is not written either.
    const unknown = await post(id, {
      results: [
        { callId: first, output: 'a' },
        { callId: 'call_nope', output: 'b' },
      ],
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'not_found', details: { callIds: ['call_nope'] } });
    // Another session's call id is just as unknown.
    const other = await client.session('asker');
    await client.send(other, 'choose one more');
    const otherCall = (await waiting(other)).pendingToolCalls[0].callId;
    expect((await post(id, { results: [{ callId: otherCall, output: 'x' }] })).status).toBe(404);
    // Another tenant cannot see the session at all.
    const stranger = await stack.tenant('stranger');
    expect(
      (
        await stranger.call('POST', `/v1/sessions/${id}/tool-results`, {
          results: [{ callId: first, output: 'x' }],
        })
      ).status,
    ).toBe(404);
    expect(await snapshot(id)).toEqual(before);

    // Answer the first: the session waits again for the second.
    expect((await post(id, { results: [{ callId: first, output: 'one' }] })).status).toBe(200);
    const again = await waiting(id);
    expect(again.pendingToolCalls.map((c: any) => c.callId)).toEqual([second]);
    const mid = await snapshot(id);
    const twice = await post(id, { results: [{ callId: first, output: 'one again' }] });
    expect(twice.status).toBe(409);
    expect(twice.body.error).toMatchObject({ code: 'tool_call_answered', details: { callIds: [first] } });
    expect(await snapshot(id)).toEqual(mid);

    // The second as an error: the model sees it; then the session is idle.
    expect((await post(id, { results: [{ callId: second, error: 'the user declined' }] })).status).toBe(200);
    await client.waitIdle(id);
    expect(JSON.stringify(stack.mock.calls.at(-1)!.messages)).toContain('the user declined');
    // The idle prune pass writes too: the snapshot is taken after it.
    await until('no job of the session left', () => sessionQuiet(stack.deps.queues, id));
    const idle = await snapshot(id);
    const late = await post(id, { results: [{ callId: second, output: 'too late' }] });
    expect(late.status).toBe(409);
    expect(late.body.error).toMatchObject({ code: 'session_not_waiting', details: { status: 'idle' } });
    expect(await snapshot(id)).toEqual(idle);

    // A session that never waited.
    const fresh = await client.session('asker');
    expect((await post(fresh, { results: [{ callId: first, output: 'x' }] })).body.error.code).toBe(
      'session_not_waiting',
    );
    expect((await post('ses_unknown', { results: [{ callId: first, output: 'x' }] })).status).toBe(404);
    await post(other, { results: [{ callId: otherCall, output: 'x' }] });
    await client.waitIdle(other);
  });

  it('timeoutMs: an unanswered call becomes an error "timed out" and the loop goes on', async () => {
    const id = await client.session('asker');
    await client.send(id, 'choose quickly');
    const s = await waiting(id);
    const [call] = s.pendingToolCalls;
    expect(new Date(call.expiresAt).getTime() - new Date(call.createdAt).getTime()).toBe(300);
    const done = await client.waitIdle(id, 10_000);
    expect(done.status).toBe('idle');
    const log = await client.history(id);
    const part = log.messages.flatMap((m: any) => m.parts).find((p: any) => p.type === 'tool');
    expect(part.state.status).toBe('error');
    expect(part.state.error).toContain('timed out');
    expect(JSON.stringify(stack.mock.calls.at(-1)!.messages)).toContain('timed out');
    const late = await post(id, { results: [{ callId: call.callId, output: 'late' }] });
    expect(late.status).toBe(409);
  });

  it('abort while waiting: the pending call is interrupted and the session is idle', async () => {
    const id = await client.session('asker');
    await client.send(id, 'choose one again');
    const s = await waiting(id);
    const res = await client.call('POST', `/v1/sessions/${id}/abort`);
    expect(res.status).toBe(202);
    const done = await client.waitIdle(id, 5_000);
    expect(done.pendingToolCalls).toEqual([]);
    const log = await client.history(id);
    const part = log.messages.flatMap((m: any) => m.parts).find((p: any) => p.type === 'tool');
    expect(part.state).toMatchObject({ status: 'error', interrupted: true });
    expect(log.messages.at(-1).info.error.name).toBe('AbortedError');
    const late = await post(id, { results: [{ callId: s.pendingToolCalls[0].callId, output: 'late' }] });
    expect(late.body.error.code).toBe('session_not_waiting');
  });
});
