import { WAKE } from '@loopline/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, rowCounts, type Stack, startStack, stepJobs, tenantWithSession } from './helpers.ts';

// POST /v1/sessions/:id/messages: one transaction (message + parts + idempotency row), the wake
// job after commit, idempotent replays, and GET in both views.

let stack: Stack;
let t: Awaited<ReturnType<typeof tenantWithSession>>;

beforeAll(async () => {
  stack = await startStack('messages');
  t = await tenantWithSession(stack.app, 'acme', { system: 'You are terse.', midRunMessages: 'steer' });
});
afterAll(async () => {
  await stack?.close();
});

const post = (sessionId: string, payload: unknown, headers: Record<string, string> = {}) =>
  stack.app.inject({
    method: 'POST',
    url: `/v1/sessions/${sessionId}/messages`,
    headers: { ...t.auth, ...headers },
    payload: payload as object,
  });

describe('POST /v1/sessions/:id/messages', () => {
  it('stores the message and its parts, queues the session and adds one wake job', async () => {
    const before = await rowCounts(stack.db);
    const res = await post(t.sessionId, {
      text: 'hello there',
      files: [{ url: 'https://x.test/a.png', mime: 'image/png' }],
    });
    expect(res.statusCode, res.body).toBe(202);
    const body = res.json();
    expect(body.session).toEqual({ id: t.sessionId, status: 'queued' });
    expect(body.message.info).toMatchObject({ role: 'user', sessionId: t.sessionId, agent: 'helper' });
    expect(body.message.info.midRun).toBeUndefined();
    expect(body.message.parts.map((p: { type: string }) => p.type)).toEqual(['text', 'file']);
    expect(body.message.parts[0].tokens).toBeGreaterThan(0);

    const after = await rowCounts(stack.db);
    expect(after.messages).toBe(before.messages + 1);
    expect(after.parts).toBe(before.parts + 2);
    const row = await stack.db
      .selectFrom('messages')
      .selectAll()
      .where('id', '=', body.message.info.id)
      .executeTakeFirstOrThrow();
    expect(row.session_id).toBe(t.sessionId);

    const job = await stack.queues.step.getJob(
      WAKE.message.jobId({ sessionId: t.sessionId, messageId: body.message.info.id }),
    );
    expect(job?.data).toEqual({ tenantId: t.tenant.id, sessionId: t.sessionId, reason: 'message' });
    expect(job?.opts.priority).toBe(1);

    const session = await stack.app.inject({
      method: 'GET',
      url: `/v1/sessions/${t.sessionId}`,
      headers: t.auth,
    });
    expect(session.json().status).toBe('queued');
    expect(session.json().tokens.used).toBeGreaterThan(0);
  });

  it('marks a message that arrives while the session runs as midRun, and leaves the status alone', async () => {
    await stack.db.updateTable('sessions').set({ status: 'running' }).where('id', '=', t.sessionId).execute();
    try {
      const res = await post(t.sessionId, { text: 'also check the tests' });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json().message.info.midRun).toBe(true);
      expect(res.json().session.status).toBe('running');
      // The model view wraps it (steer mode).
      const model = await stack.app.inject({
        method: 'GET',
        url: `/v1/sessions/${t.sessionId}/messages?view=model`,
        headers: t.auth,
      });
      expect(model.statusCode, model.body).toBe(200);
      const last = model.json().messages.at(-1);
      expect(last.role).toBe('user');
      expect(last.content[0].text).toContain('<system-reminder>');
      expect(last.content[0].text).toContain('also check the tests');
      expect(model.json().system[0]).toBe('You are terse.');
    } finally {
      await stack.db.updateTable('sessions').set({ status: 'idle' }).where('id', '=', t.sessionId).execute();
    }
  });

  it('replays an Idempotency-Key: same body → first response, nothing written, no second job', async () => {
    const headers = { 'idempotency-key': 'req-1' };
    const first = await post(t.sessionId, { text: 'exactly once', system: 'be brief' }, headers);
    expect(first.statusCode, first.body).toBe(202);
    const counts = await rowCounts(stack.db);
    const jobs = (await stepJobs(stack.queues)).length;

    // Same body with keys in another order: same canonical hash.
    const again = await post(t.sessionId, { system: 'be brief', text: 'exactly once' }, headers);
    expect(again.statusCode, again.body).toBe(202);
    expect(again.json()).toEqual(first.json());
    expect(await rowCounts(stack.db)).toEqual(counts);
    expect((await stepJobs(stack.queues)).length).toBe(jobs);

    const conflict = await post(t.sessionId, { text: 'something else' }, headers);
    expectProblem(conflict, 409, 'idempotency_conflict');
    expect(await rowCounts(stack.db)).toEqual(counts);
    expect((await stepJobs(stack.queues)).length).toBe(jobs);
  });

  it('scopes Idempotency-Keys per session', async () => {
    const other = await stack.app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: t.auth,
      payload: { agent: 'helper' },
    });
    const res = await post(
      other.json().id,
      { text: 'exactly once', system: 'be brief' },
      { 'idempotency-key': 'req-1' },
    );
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json().session.id).toBe(other.json().id);
  });

  it('answers concurrent requests with one key with one message', async () => {
    const before = await rowCounts(stack.db);
    const headers = { 'idempotency-key': 'race-1' };
    const results = await Promise.all(
      Array.from({ length: 5 }, () => post(t.sessionId, { text: 'race' }, headers)),
    );
    for (const r of results) expect(r.statusCode, r.body).toBe(202);
    const ids = new Set(results.map((r) => r.json().message.info.id));
    expect(ids.size).toBe(1);
    const after = await rowCounts(stack.db);
    expect(after.messages).toBe(before.messages + 1);
    expect(after.idempotency_keys).toBe(before.idempotency_keys + 1);
  });

  it('returns the whole log, including messages the model no longer sees', async () => {
    const res = await stack.app.inject({
      method: 'GET',
      url: `/v1/sessions/${t.sessionId}/messages`,
      headers: t.auth,
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.view).toBe('log');
    const seqs = body.messages.map((m: { info: { seq: number } }) => m.info.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(body.messages.length).toBeGreaterThanOrEqual(4);
  });
});

describe('malformed requests: 4xx problem body, nothing written', () => {
  const big = 'x'.repeat(2 * 1024 * 1024 + 10);
  const cases: { name: string; status: number; code?: string; send: () => ReturnType<typeof post> }[] = [
    {
      name: 'bad JSON',
      status: 400,
      code: 'invalid_json',
      send: () =>
        stack.app.inject({
          method: 'POST',
          url: `/v1/sessions/${t.sessionId}/messages`,
          headers: { ...t.auth, 'content-type': 'application/json' },
          payload: '{"text": "unterminated',
        }),
    },
    {
      name: 'missing text',
      status: 400,
      code: 'validation_error',
      send: () => post(t.sessionId, { system: 'x' }),
    },
    {
      name: 'empty text',
      status: 400,
      code: 'validation_error',
      send: () => post(t.sessionId, { text: '' }),
    },
    {
      name: 'text of the wrong type',
      status: 400,
      code: 'validation_error',
      send: () => post(t.sessionId, { text: 42 }),
    },
    {
      name: 'files of the wrong type',
      status: 400,
      code: 'validation_error',
      send: () => post(t.sessionId, { text: 'hi', files: 'nope' }),
    },
    {
      name: 'file with a javascript: url',
      status: 400,
      code: 'validation_error',
      send: () =>
        post(t.sessionId, { text: 'hi', files: [{ url: 'javascript:alert(1)', mime: 'text/plain' }] }),
    },
    {
      name: 'unknown field',
      status: 400,
      code: 'validation_error',
      send: () => post(t.sessionId, { text: 'hi', tex: 1 }),
    },
    {
      name: 'text over 1 MiB',
      status: 400,
      code: 'validation_error',
      send: () => post(t.sessionId, { text: 'é'.repeat(600_000) }),
    },
    {
      name: 'NUL in text',
      status: 400,
      code: 'validation_error',
      send: () => post(t.sessionId, { text: 'a\u0000b' }),
    },
    {
      name: 'lone surrogate',
      status: 400,
      code: 'validation_error',
      send: () =>
        stack.app.inject({
          method: 'POST',
          url: `/v1/sessions/${t.sessionId}/messages`,
          headers: { ...t.auth, 'content-type': 'application/json' },
          payload: '{"text": "\\ud800"}',
        }),
    },
    {
      name: 'body over 2 MB',
      status: 413,
      code: 'payload_too_large',
      send: () => post(t.sessionId, { text: big }),
    },
    {
      name: 'text/plain body',
      status: 415,
      code: 'unsupported_media_type',
      send: () =>
        stack.app.inject({
          method: 'POST',
          url: `/v1/sessions/${t.sessionId}/messages`,
          headers: { ...t.auth, 'content-type': 'text/plain' },
          payload: 'hello',
        }),
    },
    {
      name: 'empty Idempotency-Key',
      status: 400,
      code: 'validation_error',
      send: () => post(t.sessionId, { text: 'hi' }, { 'idempotency-key': '' }),
    },
    {
      name: 'Idempotency-Key over 200 chars',
      status: 400,
      code: 'validation_error',
      send: () => post(t.sessionId, { text: 'hi' }, { 'idempotency-key': 'k'.repeat(201) }),
    },
    {
      name: 'unknown session',
      status: 404,
      code: 'not_found',
      send: () => post('ses_doesnotexist', { text: 'hi' }),
    },
    {
      name: 'impossible session id',
      status: 404,
      code: 'not_found',
      send: () => post('%00%27--', { text: 'hi' }),
    },
    {
      name: 'no API key',
      status: 401,
      code: 'unauthorized',
      send: () =>
        stack.app.inject({
          method: 'POST',
          url: `/v1/sessions/${t.sessionId}/messages`,
          payload: { text: 'hi' },
        }),
    },
    {
      name: 'compact with a bad body',
      status: 400,
      code: 'validation_error',
      send: () =>
        stack.app.inject({
          method: 'POST',
          url: `/v1/sessions/${t.sessionId}/compact`,
          headers: t.auth,
          payload: { instructions: 5 },
        }),
    },
    {
      name: 'unknown view',
      status: 400,
      code: 'validation_error',
      send: () =>
        stack.app.inject({
          method: 'GET',
          url: `/v1/sessions/${t.sessionId}/messages?view=raw`,
          headers: t.auth,
        }),
    },
  ];

  for (const c of cases) {
    it(`${c.name} → ${c.status}`, async () => {
      const before = await rowCounts(stack.db);
      const jobs = (await stepJobs(stack.queues)).length;
      const res = await c.send();
      expectProblem(res, c.status, c.code);
      expect(await rowCounts(stack.db)).toEqual(before);
      expect((await stepJobs(stack.queues)).length).toBe(jobs);
    });
  }
});

describe('POST /v1/sessions/:id/compact', () => {
  it('appends a synthetic compaction message and wakes the session', async () => {
    const res = await stack.app.inject({
      method: 'POST',
      url: `/v1/sessions/${t.sessionId}/compact`,
      headers: t.auth,
      payload: { instructions: 'Keep the file names.' },
    });
    expect(res.statusCode, res.body).toBe(202);
    const { message } = res.json();
    expect(message.info.synthetic).toBe(true);
    expect(message.parts).toHaveLength(1);
    expect(message.parts[0]).toMatchObject({
      type: 'compaction',
      auto: false,
      overflow: false,
      instructions: 'Keep the file names.',
    });
    expect(
      await stack.queues.step.getJob(
        WAKE.message.jobId({ sessionId: t.sessionId, messageId: message.info.id }),
      ),
    ).toBeTruthy();
  });

  it('accepts no body at all', async () => {
    const res = await stack.app.inject({
      method: 'POST',
      url: `/v1/sessions/${t.sessionId}/compact`,
      headers: t.auth,
    });
    expect(res.statusCode, res.body).toBe(202);
  });

  it('is refused with 409 while the session is compacting, writing nothing', async () => {
    await stack.db
      .updateTable('sessions')
      .set({ status: 'compacting' })
      .where('id', '=', t.sessionId)
      .execute();
    try {
      const before = await rowCounts(stack.db);
      const jobs = (await stepJobs(stack.queues)).length;
      const res = await stack.app.inject({
        method: 'POST',
        url: `/v1/sessions/${t.sessionId}/compact`,
        headers: t.auth,
        payload: {},
      });
      expectProblem(res, 409, 'conflict');
      expect(await rowCounts(stack.db)).toEqual(before);
      expect((await stepJobs(stack.queues)).length).toBe(jobs);
    } finally {
      await stack.db.updateTable('sessions').set({ status: 'idle' }).where('id', '=', t.sessionId).execute();
    }
  });
});
