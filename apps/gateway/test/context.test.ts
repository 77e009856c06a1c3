import {
  MESSAGE_FRAMING_TOKENS,
  PROVIDER_DEFAULT_PROMPT,
  requestOverhead,
  type SessionEvent,
  type SessionStatus,
} from '@loopline/core';
import { getSession, updateSessionProgress } from '@loopline/db';
import { createTokenizer } from '@loopline/llm';
import { readEvents } from '@loopline/queue';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { assistantMsg, type Ctx, compactionPoint, usageOf, userMsg } from './build-history.ts';
import { expectProblem, OPERATOR, rowCounts, type Stack, startStack, tenantWithSession } from './helpers.ts';

// Context management through the API: the gauge (GET /sessions/:id tokens, GET …/context) against
// hand-computed numbers, compaction records, and revert across compaction points. Histories are
// written straight through the db repositories, the way the worker writes them.

// limits: context 100k, output 32k → usable 68,000 = trigger; background 0.8 × 68,000 = 54,400.
const LIMITS = { context: 100_000, output: 32_000 };

let stack: Stack;
let t: Awaited<ReturnType<typeof tenantWithSession>>;

beforeAll(async () => {
  stack = await startStack('context');
  t = await tenantWithSession(stack.app, 'acme', { limits: LIMITS });
});
afterAll(async () => {
  await stack?.close();
});

async function newSession(auth = t.auth, overrides?: Record<string, unknown>): Promise<Ctx> {
  const res = await stack.app.inject({
    method: 'POST',
    url: '/v1/sessions',
    headers: auth,
    payload: { agent: 'helper', ...(overrides ? { overrides } : {}) },
  });
  expect(res.statusCode, res.body).toBe(201);
  return { db: stack.db, tenantId: t.tenant.id, sessionId: res.json().id };
}

const get = (url: string, app: FastifyInstance = stack.app) =>
  app.inject({ method: 'GET', url, headers: t.auth });
const revert = (sessionId: string, payload: unknown, headers: Record<string, string> = t.auth) =>
  stack.app.inject({
    method: 'POST',
    url: `/v1/sessions/${sessionId}/revert`,
    headers,
    payload: payload as object,
  });

interface LogMessage {
  info: { id: string; seq: number; reverted?: boolean };
}

/** u1 (10) · a2 bash (50,010; output 50,000) · u3 (10) · a4 read (1,010) · u5 (10) · a6 (5, report 51,000 + 5). */
async function knownSession(ctx: Ctx) {
  const u1 = await userMsg(ctx, 'one', 10);
  await assistantMsg(ctx, u1.info.id, [
    { tool: 'bash', output: 'x'.repeat(100), outputTokens: 50_000, tokens: 50_010 },
  ]);
  const u3 = await userMsg(ctx, 'two', 10);
  await assistantMsg(ctx, u3.info.id, [{ tool: 'read', output: 'y', outputTokens: 1_000, tokens: 1_010 }]);
  const u5 = await userMsg(ctx, 'three', 10);
  await assistantMsg(ctx, u5.info.id, [{ text: 'done', tokens: 5 }], { usage: usageOf(51_000, 5) });
  await ctx.db
    .transaction()
    .execute((trx) => updateSessionProgress(trx, ctx.tenantId, ctx.sessionId, { tokenRatio: 1 }));
}

describe('GET /v1/sessions/:id/context', () => {
  it('on an empty session: only the request overhead, no boundary, no compactions', async () => {
    const ctx = await newSession();
    const res = await get(`/v1/sessions/${ctx.sessionId}/context`);
    expect(res.statusCode, res.body).toBe(200);
    // Before any provider report the system block counts (no tool definitions: read_output is
    // offered only with a truncated output to read), × the prior of the mock's family (o200k: 1.0).
    const overhead = requestOverhead(createTokenizer('o200k_base'), [PROVIDER_DEFAULT_PROMPT], []);
    // Plus the framing a chat template adds around the system message and the reply's opening.
    const used = Math.ceil((overhead + 2 * MESSAGE_FRAMING_TOKENS) * 1.0);
    expect(res.json()).toEqual({
      sessionId: ctx.sessionId,
      status: 'idle',
      model: 'compatible/mock',
      limits: LIMITS,
      used,
      usable: 68_000,
      trigger: 68_000,
      background: 54_400,
      percentOfTrigger: Math.round((used / 68_000) * 1000) / 10,
      pruneWouldFree: { parts: 0, tokens: 0 },
      suggestion: {
        shouldCompact: false,
        estimatedSavings: 0,
        reason: expect.stringContaining('below the background threshold (54,400)'),
      },
      flags: { autocompact: true, prune: true },
      boundary: null,
      compactions: [],
      ratio: { value: 1, learned: false, weight: 0, margin: 0.05 },
      estimates: [],
    });
    const session = await get(`/v1/sessions/${ctx.sessionId}`);
    expect(session.json().tokens).toEqual({ used, usable: 68_000, trigger: 68_000, background: 54_400 });
    expect(session.json().compaction).toEqual({ count: 0, lastAt: null, last: null });
  });

  it('matches hand-computed gauge values for known part tokens', async () => {
    // Prune protects the newest two steps here (a4, a6), so bash's output in a2 is prunable.
    const ctx = await newSession(t.auth, { compaction: { pruneProtectSteps: 2 } });
    await knownSession(ctx);
    const res = await get(`/v1/sessions/${ctx.sessionId}/context`);
    expect(res.statusCode, res.body).toBe(200);
    // used: the last report, 51,000 input + 5 output, nothing since.
    // prune: bash's 50,000 lies beyond the two protected steps and passes the protection
    // (min(40,000, 25 % of 68,000) = 17,000) → cleared,
    // minus its 9-token placeholder = 49,991. summary: head u1 + a2 (10 + 10 + 9 = 29 after the
    // prune) minus an expected summary of ceil(29 / 10) = 3 → 26. Savings 49,991 + 26.
    expect(res.json()).toMatchObject({
      used: 51_005,
      usable: 68_000,
      trigger: 68_000,
      background: 54_400,
      percentOfTrigger: 75,
      pruneWouldFree: { parts: 1, tokens: 49_991 },
      suggestion: { shouldCompact: false, estimatedSavings: 50_017 },
    });
    const session = await get(`/v1/sessions/${ctx.sessionId}`);
    expect(session.json().tokens).toEqual({
      used: 51_005,
      usable: 68_000,
      trigger: 68_000,
      background: 54_400,
    });

    // Above the background threshold once the next report is larger.
    const u7 = await userMsg(ctx, 'four', 10);
    await assistantMsg(ctx, u7.info.id, [{ text: 'ok', tokens: 5 }], { usage: usageOf(60_000, 5) });
    const above = (await get(`/v1/sessions/${ctx.sessionId}/context`)).json();
    expect(above.used).toBe(60_005);
    expect(above.suggestion.shouldCompact).toBe(true);
    expect(above.suggestion.reason).toContain('above the background threshold (54,400)');
  });

  it('reports the switches in effect: agent settings and the process flags', async () => {
    const off = await newSession(t.auth, { compaction: { auto: false, prune: false } });
    await knownSession(off);
    const res = (await get(`/v1/sessions/${off.sessionId}/context`)).json();
    expect(res.flags).toEqual({ autocompact: false, prune: false });
    expect(res.pruneWouldFree).toEqual({ parts: 0, tokens: 0 });

    const ctx = await newSession();
    const app = await buildApp({
      db: stack.db,
      redis: stack.redis,
      queues: stack.queues,
      keys: stack.keys,
      operatorToken: OPERATOR,
      logger: false,
      flags: { disableAutocompact: true, disablePrune: true },
    });
    try {
      const flagged = (await get(`/v1/sessions/${ctx.sessionId}/context`, app)).json();
      expect(flagged.flags).toEqual({ autocompact: false, prune: false });
    } finally {
      await app.close();
    }
  });

  it('is 404 for an unknown session', async () => {
    expectProblem(await get('/v1/sessions/ses_nope/context'), 404, 'not_found');
  });
});

/**
 * u1 · a2 · u3 · a4 · c5 (compaction) · s6 (its summary) · u7 (continue) · a8 · u9 · a10 (report),
 * with the boundary pointer at 5, as the worker leaves it after the compaction.
 */
async function compactedSession(ctx: Ctx) {
  const u1 = await userMsg(ctx, 'first question', 10);
  const a2 = await assistantMsg(ctx, u1.info.id, [{ text: 'first answer', tokens: 10 }]);
  const u3 = await userMsg(ctx, 'second question', 10);
  const a4 = await assistantMsg(ctx, u3.info.id, [{ text: 'second answer', tokens: 10 }]);
  const point = await compactionPoint(ctx);
  const u7 = await userMsg(ctx, 'Continue if you have next steps', 10, true);
  const a8 = await assistantMsg(ctx, u7.info.id, [{ text: 'continuing', tokens: 10 }]);
  const u9 = await userMsg(ctx, 'third question', 10);
  const a10 = await assistantMsg(ctx, u9.info.id, [{ text: 'third answer', tokens: 10 }], {
    usage: usageOf(3_000, 10),
  });
  await ctx.db.transaction().execute((trx) =>
    updateSessionProgress(trx, ctx.tenantId, ctx.sessionId, {
      lastUsage: { usage: usageOf(3_000, 10), messageSeq: a10.info.seq },
    }),
  );
  return { u1, a2, u3, a4, ...point, u7, a8, u9, a10 };
}

const modelView = async (sessionId: string) => {
  const res = await get(`/v1/sessions/${sessionId}/messages?view=model`);
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().messages as { role: string; content: { type: string; text?: string }[] }[]).map(
    (m) => `${m.role}: ${m.content.map((c) => c.text ?? c.type).join(' ')}`,
  );
};
const logView = async (sessionId: string) => {
  const res = await get(`/v1/sessions/${sessionId}/messages?view=log`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().messages as LogMessage[];
};
const events = async (sessionId: string): Promise<SessionEvent[]> =>
  (await readEvents(stack.redis, stack.keys, sessionId, '0', 1)).map((e) => e.event);

describe('POST /v1/sessions/:id/revert', () => {
  it('reverts across a compaction point: boundary recomputed, pre-compaction history back in view', async () => {
    const ctx = await newSession();
    const h = await compactedSession(ctx);
    expect(await modelView(ctx.sessionId)).toEqual([
      'user: What did we do so far?',
      'assistant: SUMMARY of the work so far',
      'user: Continue if you have next steps',
      'assistant: continuing',
      'user: third question',
      'assistant: third answer',
    ]);
    const before = (await get(`/v1/sessions/${ctx.sessionId}/context`)).json();
    expect(before.boundary).toEqual({
      seq: h.marker.info.seq,
      messageId: h.marker.info.id,
      summaryMessageId: h.summary.info.id,
      tailStartId: null,
    });
    expect(before.compactions).toEqual([
      expect.objectContaining({
        id: h.recordId,
        messageId: h.marker.info.id,
        summaryMessageId: h.summary.info.id,
        reason: 'auto',
        rung: 'summary',
        status: 'completed',
        tokensBefore: 90_000,
        tokensAfter: 9_000,
        model: 'compatible/mock',
        reverted: false,
      }),
    ]);
    expect(before.compactions[0].durationMs).toBeGreaterThanOrEqual(0);
    const session = (await get(`/v1/sessions/${ctx.sessionId}`)).json();
    expect(session.compaction).toMatchObject({ count: 1, last: { id: h.recordId, status: 'completed' } });
    expect(session.compaction.lastAt).toBe(before.compactions[0].finishedAt);
    const fence = (await getSession(stack.db, ctx.tenantId, ctx.sessionId))!.fence;

    const res = await revert(ctx.sessionId, { messageId: h.u3.info.id });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.reverted).toBe(8);
    expect(body.fromSeq).toBe(h.u3.info.seq);
    expect(body.session).toMatchObject({
      id: ctx.sessionId,
      status: 'idle',
      compaction: { count: 0, lastAt: null, last: null },
    });

    // The model sees the history before the revert point, from the start (no boundary left).
    expect(await modelView(ctx.sessionId)).toEqual(['user: first question', 'assistant: first answer']);
    const row = (await getSession(stack.db, ctx.tenantId, ctx.sessionId))!;
    expect(row.boundarySeq).toBeNull();
    expect(row.lastUsage).toBeNull();
    expect(row.fence).toBe(fence + 1);
    // The log keeps every row; the hidden ones are marked.
    const log = await logView(ctx.sessionId);
    expect(log.map((m) => [m.info.seq, m.info.reverted === true])).toEqual([
      [1, false],
      [2, false],
      ...[3, 4, 5, 6, 7, 8, 9, 10].map((s) => [s, true]),
    ]);
    const after = (await get(`/v1/sessions/${ctx.sessionId}/context`)).json();
    expect(after.boundary).toBeNull();
    expect(after.compactions).toEqual([expect.objectContaining({ id: h.recordId, reverted: true })]);
    expect(await events(ctx.sessionId)).toContainEqual({
      type: 'session.reverted',
      messageId: h.u3.info.id,
      fromSeq: 3,
      reverted: 8,
      boundarySeq: null,
    });

    // New input appends after the revert; the reverted rows stay reverted.
    const posted = await stack.app.inject({
      method: 'POST',
      url: `/v1/sessions/${ctx.sessionId}/messages`,
      headers: t.auth,
      payload: { text: 'a different second question' },
    });
    expect(posted.statusCode, posted.body).toBe(202);
    expect(posted.json().message.info.seq).toBe(11);
    expect(await modelView(ctx.sessionId)).toEqual([
      'user: first question',
      'assistant: first answer',
      'user: a different second question',
    ]);
    expect((await logView(ctx.sessionId)).filter((m) => m.info.reverted).length).toBe(8);
  });

  it('keeps a boundary before the revert point', async () => {
    const ctx = await newSession();
    const h = await compactedSession(ctx);
    const res = await revert(ctx.sessionId, { messageId: h.u9.info.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ reverted: 2, fromSeq: 9, session: { compaction: { count: 1 } } });
    expect(await modelView(ctx.sessionId)).toEqual([
      'user: What did we do so far?',
      'assistant: SUMMARY of the work so far',
      'user: Continue if you have next steps',
      'assistant: continuing',
    ]);
    const row = (await getSession(stack.db, ctx.tenantId, ctx.sessionId))!;
    expect(row.boundarySeq).toBe(h.marker.info.seq);
    expect(row.lastUsage).toBeNull(); // it belonged to a10, now hidden
    // A hidden message is no revert point: 409, nothing changes.
    const before = await logView(ctx.sessionId);
    expectProblem(await revert(ctx.sessionId, { messageId: h.a10.info.id }), 409, 'conflict');
    expect(await logView(ctx.sessionId)).toEqual(before);
  });

  it('refuses a message an earlier revert hid, so live history written since survives', async () => {
    // t1 t2 t3 → revert to t2 → t4 → "revert to t3" (hidden) must not hide t4.
    const ctx = await newSession();
    const t1 = await userMsg(ctx, 't1', 10);
    const t2 = await userMsg(ctx, 't2', 10);
    const t3 = await userMsg(ctx, 't3', 10);
    expect((await revert(ctx.sessionId, { messageId: t2.info.id })).statusCode).toBe(200);
    const t4 = await userMsg(ctx, 't4', 10);
    const error = expectProblem(await revert(ctx.sessionId, { messageId: t3.info.id }), 409, 'conflict');
    expect(error.message).toContain('already reverted');
    const log = await logView(ctx.sessionId);
    expect(log.filter((m) => !m.info.reverted).map((m) => m.info.id)).toEqual([t1.info.id, t4.info.id]);
  });

  it('reverting to a summary takes its whole compaction point with it', async () => {
    const ctx = await newSession();
    const h = await compactedSession(ctx);
    const res = await revert(ctx.sessionId, { messageId: h.summary.info.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ reverted: 6, fromSeq: h.marker.info.seq });
    expect(await modelView(ctx.sessionId)).toEqual([
      'user: first question',
      'assistant: first answer',
      'user: second question',
      'assistant: second answer',
    ]);
  });

  it('keeps a kept tail when the boundary survives, across two compaction points', async () => {
    const ctx = await newSession();
    const h = await compactedSession(ctx);
    // A second compaction after u9 that kept u9/a10 as its tail.
    const second = await compactionPoint(ctx, { tailStartId: h.u9.info.id });
    const u13 = await userMsg(ctx, 'fourth question', 10);
    await assistantMsg(ctx, u13.info.id, [{ text: 'fourth answer', tokens: 10 }]);
    expect((await getSession(stack.db, ctx.tenantId, ctx.sessionId))!.boundarySeq).toBe(
      second.marker.info.seq,
    );

    // Back to between the two points: the first boundary is the newest one left.
    const res = await revert(ctx.sessionId, { messageId: second.marker.info.id });
    expect(res.statusCode, res.body).toBe(200);
    expect((await getSession(stack.db, ctx.tenantId, ctx.sessionId))!.boundarySeq).toBe(h.marker.info.seq);
    expect(await modelView(ctx.sessionId)).toEqual([
      'user: What did we do so far?',
      'assistant: SUMMARY of the work so far',
      'user: Continue if you have next steps',
      'assistant: continuing',
      'user: third question',
      'assistant: third answer',
    ]);
    expect(res.json().session.compaction.count).toBe(1);
  });

  it('turns an error status into idle', async () => {
    const ctx = await newSession();
    const u1 = await userMsg(ctx, 'q', 10);
    await stack.db
      .updateTable('sessions')
      .set({ status: 'error', status_detail: 'boom' })
      .where('id', '=', ctx.sessionId)
      .execute();
    const res = await revert(ctx.sessionId, { messageId: u1.info.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().session).toMatchObject({ status: 'idle', statusDetail: null, error: null });
    expect(await events(ctx.sessionId)).toContainEqual({ type: 'session.status', status: 'idle' });
  });
});

async function snapshot() {
  const reverted = await stack.db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('reverted', '=', true)
    .executeTakeFirstOrThrow();
  const sessions = await stack.db
    .selectFrom('sessions')
    .select(['id', 'status', 'fence', 'boundary_seq', 'last_usage', 'updated_at'])
    .orderBy('id')
    .execute();
  return { counts: await rowCounts(stack.db), reverted: Number(reverted.n), sessions };
}

describe('revert refusals: 4xx problem body, nothing written', () => {
  let ctx: Ctx;
  let h: Awaited<ReturnType<typeof compactedSession>>;
  beforeAll(async () => {
    ctx = await newSession();
    h = await compactedSession(ctx);
  });

  it.each(['queued', 'running', 'compacting', 'waiting'] as SessionStatus[])(
    'is 409 session_busy while the session is %s',
    async (status) => {
      await stack.db.updateTable('sessions').set({ status }).where('id', '=', ctx.sessionId).execute();
      try {
        const before = await snapshot();
        const stream = await stack.redis.xlen(stack.keys.events(ctx.sessionId));
        const error = expectProblem(
          await revert(ctx.sessionId, { messageId: h.u3.info.id }),
          409,
          'session_busy',
        );
        expect(error.details).toEqual({ status });
        expect(await snapshot()).toEqual(before);
        expect(await stack.redis.xlen(stack.keys.events(ctx.sessionId))).toBe(stream);
      } finally {
        await stack.db
          .updateTable('sessions')
          .set({ status: 'idle' })
          .where('id', '=', ctx.sessionId)
          .execute();
      }
    },
  );

  it('refuses bad input and unknown or foreign ids', async () => {
    const other = await tenantWithSession(stack.app, 'other-tenant', { limits: LIMITS });
    const otherCtx: Ctx = { db: stack.db, tenantId: other.tenant.id, sessionId: other.sessionId };
    const foreignMessage = await userMsg(otherCtx, 'not yours', 10);
    const sibling = await newSession();
    const siblingMessage = await userMsg(sibling, 'another session', 10);
    const before = await snapshot();
    const cases: { name: string; status: number; code: string; send: () => ReturnType<typeof revert> }[] = [
      {
        name: 'no body',
        status: 400,
        code: 'validation_error',
        send: () => revert(ctx.sessionId, undefined),
      },
      { name: 'empty object', status: 400, code: 'validation_error', send: () => revert(ctx.sessionId, {}) },
      {
        name: 'messageId of the wrong type',
        status: 400,
        code: 'validation_error',
        send: () => revert(ctx.sessionId, { messageId: 42 }),
      },
      {
        name: 'unknown field',
        status: 400,
        code: 'validation_error',
        send: () => revert(ctx.sessionId, { messageId: h.u3.info.id, hard: true }),
      },
      {
        name: 'impossible message id',
        status: 400,
        code: 'validation_error',
        send: () => revert(ctx.sessionId, { messageId: "msg_x'; drop table messages;--" }),
      },
      {
        name: 'bad JSON',
        status: 400,
        code: 'invalid_json',
        send: () =>
          stack.app.inject({
            method: 'POST',
            url: `/v1/sessions/${ctx.sessionId}/revert`,
            headers: { ...t.auth, 'content-type': 'application/json' },
            payload: '{"messageId": ',
          }),
      },
      {
        name: 'unknown message',
        status: 404,
        code: 'not_found',
        send: () => revert(ctx.sessionId, { messageId: 'msg_doesnotexist' }),
      },
      {
        name: "a message of the tenant's other session",
        status: 404,
        code: 'not_found',
        send: () => revert(ctx.sessionId, { messageId: siblingMessage.info.id }),
      },
      {
        name: "another tenant's message",
        status: 404,
        code: 'not_found',
        send: () => revert(ctx.sessionId, { messageId: foreignMessage.info.id }),
      },
      {
        name: "another tenant's session",
        status: 404,
        code: 'not_found',
        send: () => revert(other.sessionId, { messageId: foreignMessage.info.id }),
      },
      {
        name: 'unknown session',
        status: 404,
        code: 'not_found',
        send: () => revert('ses_doesnotexist', { messageId: h.u3.info.id }),
      },
      {
        name: 'no API key',
        status: 401,
        code: 'unauthorized',
        send: () => revert(ctx.sessionId, { messageId: h.u3.info.id }, {}),
      },
    ];
    for (const c of cases) {
      const res = await c.send();
      expect(res.statusCode, `${c.name}: ${res.body}`).toBe(c.status);
      expectProblem(res, c.status, c.code);
    }
    expect(await snapshot()).toEqual(before);
    expect(await logView(ctx.sessionId)).toHaveLength(10);
    expect((await get(`/v1/sessions/${other.sessionId}/messages`, stack.app)).statusCode).toBe(404);
  });
});
