import { jobIds } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionQuiet } from '../support/jobs.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// Batches end to end: POST /v1/batches (JSON and JSONL) → one session per
// conversation → a BullMQ flow (batch parent, a child per conversation posting its messages turn
// by turn) → results as JSONL; cancel; bad inputs write nothing.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        // Slow answers for the cancel test: 20 chunks × 40 ms.
        {
          when: { lastUserIncludes: 'slowly' },
          reply: { text: 'a slow answer in many small pieces', chunks: 20 },
          latencyMs: 40,
        },
      ],
    },
    fairness: { slotRetryMs: 200 },
  });
  client = await stack.tenant('batches');
  await client.agent('helper', {});
});
afterAll(() => stack?.close());

async function waitBatch(
  id: string,
  done: (b: any) => boolean,
  timeoutMs = 60_000,
  as: Client = client,
): Promise<any> {
  let last: unknown;
  try {
    return await until(
      `batch ${id}`,
      async () => {
        const res = await as.call('GET', `/v1/batches/${id}`);
        expect(res.status).toBe(200);
        last = res.body;
        return done(res.body) ? res.body : undefined;
      },
      timeoutMs,
      100,
    );
  } catch {
    throw new Error(`batch ${id} not done: ${JSON.stringify(last)}`);
  }
}

async function results(
  id: string,
  as: Client = client,
): Promise<{ contentType: string | null; lines: any[] }> {
  const res = await fetch(`${stack.url}/v1/batches/${id}/results`, {
    headers: { authorization: `Bearer ${as.apiKey}` },
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text.endsWith('\n')).toBe(true);
  return {
    contentType: res.headers.get('content-type'),
    lines: text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l)),
  };
}

/** What a refused request must not change (other tests' batches may still be settling). */
async function counts() {
  const row = async (table: 'batches' | 'batch_items' | 'sessions') =>
    Number(
      (
        await stack.deps.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    batches: await row('batches'),
    items: await row('batch_items'),
    sessions: await row('sessions'),
    batchJobs: Object.values(await stack.deps.queues.batch.getJobCounts()).reduce((a, b) => a + b, 0),
  };
}

describe('batches', () => {
  it('runs 200 conversations (one or two turns) to a correct results file', async () => {
    // Even rows have two turns (the second posted once the first is answered), odd rows one.
    const conversations = Array.from({ length: 200 }, (_, i) => ({
      messages: i % 2 === 0 ? [`first ${i}`, { text: `second ${i}` }] : [`only ${i}`],
      metadata: { row: i },
    }));
    const created = await client.call('POST', '/v1/batches', {
      agent: 'helper',
      conversations,
      metadata: { run: 'big' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      agent: 'helper',
      status: 'running',
      total: 200,
      metadata: { run: 'big' },
    });
    const id = created.body.id;
    const done = await waitBatch(id, (b) => b.status === 'completed');
    expect(done.counts).toEqual({ queued: 0, running: 0, completed: 200, failed: 0, cancelled: 0 });
    expect(done.completedAt).not.toBeNull();

    const { contentType, lines } = await results(id);
    expect(contentType).toContain('application/x-ndjson');
    expect(lines).toHaveLength(200);
    lines.forEach((line, i) => {
      expect(line).toMatchObject({
        index: i,
        status: 'completed',
        output: i % 2 === 0 ? `OK: second ${i}` : `OK: only ${i}`,
        modelCalls: i % 2 === 0 ? 2 : 1,
        compactions: 0,
        error: null,
        metadata: { row: i },
      });
      expect(line.usage.input).toBeGreaterThan(0);
      expect(line.usage.output).toBeGreaterThan(0);
      expect(line.usage.total).toBeGreaterThan(line.usage.input);
    });
    expect(new Set(lines.map((l) => l.sessionId)).size).toBe(200);
    // Each conversation's messages went in one at a time, in order, each answered before the next.
    const log = await client.history(lines[8].sessionId);
    expect(
      log.messages.map((m: any) => [m.info.role, m.parts.find((p: any) => p.type === 'text')?.text]),
    ).toEqual([
      ['user', 'first 8'],
      ['assistant', 'OK: first 8'],
      ['user', 'second 8'],
      ['assistant', 'OK: second 8'],
    ]);
    const session = await client.call('GET', `/v1/sessions/${lines[8].sessionId}`);
    expect(session.body).toMatchObject({ status: 'idle', metadata: { row: 8 } });
    // The flow finished: the parent job completed after its 200 children.
    const parent = await stack.deps.queues.batch.getJob(jobIds.batch(id));
    expect(await parent?.getState()).toBe('completed');
  }, 90_000);

  it('takes a JSONL upload: one conversation per line, agent in ?agent=', async () => {
    const body = [
      JSON.stringify({ messages: ['alpha'], metadata: { k: 'a' } }),
      '',
      JSON.stringify({ messages: [{ text: 'beta' }, 'gamma'] }),
      JSON.stringify({ messages: ['delta'] }),
      '',
    ].join('\n');
    const res = await fetch(`${stack.url}/v1/batches?agent=helper`, {
      method: 'POST',
      headers: { authorization: `Bearer ${client.apiKey}`, 'content-type': 'application/x-ndjson' },
      body,
    });
    const created = (await res.json()) as any;
    expect(res.status, JSON.stringify(created)).toBe(201);
    expect(created.total).toBe(3);
    await waitBatch(created.id, (b) => b.status === 'completed');
    const { lines } = await results(created.id);
    expect(lines.map((l) => [l.index, l.status, l.output, l.metadata])).toEqual([
      [0, 'completed', 'OK: alpha', { k: 'a' }],
      [1, 'completed', 'OK: gamma', {}],
      [2, 'completed', 'OK: delta', {}],
    ]);
  });

  it('cancels a batch: queued conversations never start, nothing is posted after', async () => {
    // One running session at a time for this tenant, so most conversations are still queued.
    const operator = { authorization: `Bearer ${stack.operatorToken}`, 'content-type': 'application/json' };
    const other = await stack.tenant('cancelling');
    await other.agent('helper', {});
    const patched = await fetch(`${stack.url}/v1/admin/tenants/${other.tenantId}`, {
      method: 'PATCH',
      headers: operator,
      body: JSON.stringify({ limits: { maxConcurrentSessions: 1 } }),
    });
    expect(patched.status).toBe(200);
    const created = await other.call('POST', '/v1/batches', {
      agent: 'helper',
      conversations: Array.from({ length: 6 }, (_, i) => ({
        messages: [`answer slowly ${i}`, `then again ${i}`],
      })),
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    await waitBatch(id, (b) => b.counts.running === 1, 20_000, other);
    const cancelled = await other.call('POST', `/v1/batches/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect(cancelled.body.cancelledAt).not.toBeNull();
    expect(cancelled.body.counts.cancelled).toBe(6);
    // Cancelling again changes nothing.
    const again = await other.call('POST', `/v1/batches/${id}/cancel`);
    expect(again.body).toMatchObject({ status: 'cancelled', counts: { cancelled: 6 } });

    // Every session settles: none running, none queued; the queued ones were stopped as cancelled.
    const sessions = await until(
      'every session of the batch idle',
      async () => {
        const rows = await stack.deps.db
          .selectFrom('batch_items as i')
          .innerJoin('sessions as s', 's.id', 'i.session_id')
          .select(['s.id', 's.status', 's.status_detail'])
          .where('i.batch_id', '=', id)
          .execute();
        return rows.every((s) => s.status === 'idle') ? rows : undefined;
      },
      20_000,
      100,
    );
    const stopped = sessions.filter((s) => s.status_detail === 'cancelled with its batch');
    expect(stopped.length).toBeGreaterThanOrEqual(5);
    // The one that was answering was aborted (POST /v1/sessions/:id/abort's function): its reply
    // ends with AbortedError.
    for (const s of sessions.filter((x) => x.status_detail !== 'cancelled with its batch')) {
      const log = await other.history(s.id);
      expect(log.messages.at(-1).info).toMatchObject({ role: 'assistant', error: { name: 'AbortedError' } });
    }
    // No second message was ever posted, and no further model call happens.
    const users = await stack.deps.db
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where(
        'session_id',
        'in',
        sessions.map((s) => s.id),
      )
      .where('role', '=', 'user')
      .executeTakeFirstOrThrow();
    expect(Number(users.n)).toBe(6);
    const calls = stack.mock.calls.length;
    // The flow ends: the item jobs see the cancel and the parent runs (status stays cancelled).
    await expect
      .poll(async () => stack.deps.queues.batch.getJob(jobIds.batch(id)).then((j) => j?.getState()), {
        timeout: 15_000,
      })
      .toBe('completed');
    expect((await other.call('GET', `/v1/batches/${id}`)).body.status).toBe('cancelled');
    // With the flow done and no job of any session left, no further model call was made.
    for (const s of sessions)
      await until('no job of the session left', () => sessionQuiet(stack.deps.queues, s.id));
    expect(stack.mock.calls.length).toBe(calls);
    const { lines } = await results(id, other);
    expect(lines.map((l) => l.status)).toEqual(Array(6).fill('cancelled'));
  }, 60_000);

  it('reports usage, model calls and the last output of cancelled conversations that ran', async () => {
    const t = await stack.tenant('cancel-results');
    await t.agent('helper', {});
    const created = await t.call('POST', '/v1/batches', {
      agent: 'helper',
      conversations: [{ messages: ['first turn', 'now answer slowly', 'never sent'] }],
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    // The first turn has been answered (its reply carries usage) before the cancel.
    const sessionId = await until('the first turn answered', async () => {
      const item = await stack.deps.db
        .selectFrom('batch_items')
        .select(['session_id', 'sent'])
        .where('batch_id', '=', id)
        .executeTakeFirst();
      return item && item.sent >= 2 ? item.session_id : undefined;
    });
    expect((await t.call('POST', `/v1/batches/${id}/cancel`)).status).toBe(200);
    await expect
      .poll(async () => (await t.call('GET', `/v1/sessions/${sessionId}`)).body.status, { timeout: 20_000 })
      .toBe('idle');
    const { lines } = await results(id, t);
    expect(lines).toHaveLength(1);
    expect(lines[0].status).toBe('cancelled');
    expect(lines[0].modelCalls).toBeGreaterThanOrEqual(1);
    expect(lines[0].usage.total).toBeGreaterThan(0);
    expect(lines[0].output).toEqual(expect.any(String));
  }, 60_000);

  describe('bad input is a 400 and writes nothing', () => {
    const jsonl = (body: string, query = '?agent=helper') =>
      fetch(`${stack.url}/v1/batches${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${client.apiKey}`, 'content-type': 'application/x-ndjson' },
        body,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

    it('refuses empty, oversized and malformed batches', async () => {
      const before = await counts();
      const cases: [string, Promise<{ status: number; body: any }>, number, string][] = [
        [
          'no conversations',
          client.call('POST', '/v1/batches', { agent: 'helper', conversations: [] }),
          400,
          'validation_error',
        ],
        [
          'a conversation without messages',
          client.call('POST', '/v1/batches', { agent: 'helper', conversations: [{ messages: [] }] }),
          400,
          'validation_error',
        ],
        [
          'an empty message',
          client.call('POST', '/v1/batches', { agent: 'helper', conversations: [{ messages: [''] }] }),
          400,
          'validation_error',
        ],
        [
          'an unknown field',
          client.call('POST', '/v1/batches', {
            agent: 'helper',
            conversations: [{ messages: ['x'], extra: 1 }],
          }),
          400,
          'validation_error',
        ],
        [
          'too many conversations',
          client.call('POST', '/v1/batches', {
            agent: 'helper',
            conversations: Array.from({ length: 10_001 }, () => ({ messages: ['x'] })),
          }),
          400,
          'validation_error',
        ],
        [
          'an unknown agent',
          client.call('POST', '/v1/batches', { agent: 'nobody', conversations: [{ messages: ['x'] }] }),
          404,
          'not_found',
        ],
        ['an empty JSONL upload', jsonl('\n\n'), 400, 'validation_error'],
        ['a JSONL upload without ?agent=', jsonl('{"messages":["x"]}\n', ''), 400, 'validation_error'],
      ];
      for (const [what, request, status, code] of cases) {
        const res = await request;
        expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(status);
        expect(res.body.error.code, what).toBe(code);
      }
      const many = await cases[4]![1];
      expect(many.body.error.message).toContain('at most 10000');
      expect(await counts()).toEqual(before);
    });

    it('names the bad line of a JSONL upload', async () => {
      const before = await counts();
      const good = JSON.stringify({ messages: ['fine'] });
      const malformed = await jsonl([good, good, '{"messages": ["oops"', good].join('\n'));
      expect(malformed.status).toBe(400);
      expect(malformed.body.error).toMatchObject({ code: 'validation_error', details: { line: 3 } });
      expect(malformed.body.error.message).toContain('line 3');
      const invalid = await jsonl([good, '', JSON.stringify({ messages: 'not a list' })].join('\n'));
      expect(invalid.status).toBe(400);
      expect(invalid.body.error).toMatchObject({ code: 'validation_error', details: { line: 3 } });
      expect(invalid.body.error.details.issues[0].path).toBe('/messages');
      const nul = await jsonl(`${good}\n${JSON.stringify({ messages: ['a\u0000b'] })}`);
      expect(nul.status).toBe(400);
      expect(nul.body.error.details.line).toBe(2);
      expect(await counts()).toEqual(before);
    });
  });
});
