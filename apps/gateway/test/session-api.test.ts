import {
  appendUserMessageAndQueue,
  createSession,
  getAgent,
  listSessionPage,
  setSessionStatus,
} from '@loopline/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, rowCounts, type Stack, startStack, tenantWithSession } from './helpers.ts';

// The calls every platform needs: listing sessions (filters, cursor pages, newest first), a
// session's children, history pages, deleting sessions, agents and tools. Bad input is a problem
// body and changes nothing.

let stack: Stack;
let t: Awaited<ReturnType<typeof tenantWithSession>>;

beforeAll(async () => {
  stack = await startStack('session_api');
  t = await tenantWithSession(stack.app, 'acme');
});
afterAll(async () => {
  await stack?.close();
});

const get = (url: string) => stack.app.inject({ method: 'GET', url, headers: t.auth });
const del = (url: string) => stack.app.inject({ method: 'DELETE', url, headers: t.auth });
const create = async (metadata: Record<string, unknown> = {}) => {
  const res = await stack.app.inject({
    method: 'POST',
    url: '/v1/sessions',
    headers: t.auth,
    payload: { agent: 'helper', metadata },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id as string;
};

describe('GET /v1/sessions', () => {
  it('lists newest first, page by page with the cursor, and filters', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await create({ userId: i % 2 === 0 ? 'u-even' : 'u-odd', i }));
    const seen: string[] = [];
    let url = '/v1/sessions?limit=2';
    for (;;) {
      const res = await get(url);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.sessions.length).toBeLessThanOrEqual(2);
      seen.push(...body.sessions.map((s: { id: string }) => s.id));
      if (!body.nextCursor) break;
      url = `/v1/sessions?limit=2&cursor=${body.nextCursor}`;
    }
    expect(seen).toEqual([...ids.reverse(), t.sessionId]);
    // A page never reads the sessions' frozen agent configs (each up to the body limit).
    const page = await listSessionPage(stack.db, t.tenant.id, {}, { limit: 200 });
    expect(page.sessions.length).toBe(6);
    for (const s of page.sessions) expect(s).not.toHaveProperty('agent');

    const even = await get(`/v1/sessions?metadata=${encodeURIComponent('{"userId":"u-even"}')}`);
    expect(even.json().sessions.map((s: { metadata: { i: number } }) => s.metadata.i)).toEqual([4, 2, 0]);
    const summary = even.json().sessions[0];
    expect(summary).toMatchObject({
      agent: 'helper',
      kind: 'interactive',
      status: 'idle',
      parentSessionId: null,
    });

    await setSessionStatus(stack.db, t.tenant.id, ids[0]!, 'error');
    const failed = await get('/v1/sessions?status=error,waiting');
    expect(failed.json().sessions.map((s: { id: string }) => s.id)).toEqual([ids[0]]);
    expect((await get('/v1/sessions?agent=nobody')).json().sessions).toEqual([]);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await get(`/v1/sessions?createdAfter=${future}`)).json().sessions).toEqual([]);
    expect((await get(`/v1/sessions?createdBefore=${future}&limit=200`)).json().sessions).toHaveLength(6);
  });

  it("lists a parent session's children, which name their parent", async () => {
    const parent = await create();
    const agent = await getAgent(stack.db, t.tenant.id, 'helper');
    const child = await createSession(stack.db, {
      tenantId: t.tenant.id,
      agentName: 'helper',
      agent: agent!.config,
      parentSessionId: parent,
    });
    const children = await get(`/v1/sessions/${parent}/children`);
    expect(children.statusCode, children.body).toBe(200);
    expect(children.json().sessions.map((s: { id: string }) => s.id)).toEqual([child.id]);
    expect((await get(`/v1/sessions?parent=${parent}`)).json().sessions).toHaveLength(1);
    const view = await get(`/v1/sessions/${child.id}`);
    expect(view.json().parentSessionId).toBe(parent);
    expect((await get(`/v1/sessions/${parent}`)).json().parentSessionId).toBeNull();
    // Deleting the parent takes the child with it.
    const res = await del(`/v1/sessions/${parent}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().sessionIds.sort()).toEqual([parent, child.id].sort());
    expectProblem(await get(`/v1/sessions/${child.id}`), 404, 'not_found');
  });

  it('refuses bad filters and cursors with 400', async () => {
    for (const query of [
      'status=sleeping',
      'status=',
      'limit=0',
      'limit=201',
      'limit=ten',
      'metadata=notjson',
      'metadata=[1]',
      'createdAfter=yesterday',
      'cursor=bm90IGEgY3Vyc29y',
      'cursor=%5B%22x%22%5D',
      'agent=bad%20name',
      'unknown=1',
    ])
      expectProblem(await get(`/v1/sessions?${query}`), 400, 'validation_error');
  });
});

describe('GET /v1/sessions/:id/messages pages', () => {
  it('pages forward with after and backward with before', async () => {
    const id = await create();
    for (let i = 1; i <= 5; i++) {
      const res = await stack.app.inject({
        method: 'POST',
        url: `/v1/sessions/${id}/messages`,
        headers: t.auth,
        payload: { text: `message ${i}` },
      });
      expect(res.statusCode, res.body).toBe(202);
    }
    const seqs = (url: string) =>
      get(url).then((r) => {
        expect(r.statusCode, r.body).toBe(200);
        const body = r.json();
        return {
          seqs: body.messages.map((m: { info: { seq: number } }) => m.info.seq),
          hasMore: body.hasMore,
        };
      });
    expect(await seqs(`/v1/sessions/${id}/messages`)).toEqual({ seqs: [1, 2, 3, 4, 5], hasMore: false });
    expect(await seqs(`/v1/sessions/${id}/messages?limit=2`)).toEqual({ seqs: [1, 2], hasMore: true });
    expect(await seqs(`/v1/sessions/${id}/messages?limit=2&after=2`)).toEqual({
      seqs: [3, 4],
      hasMore: true,
    });
    expect(await seqs(`/v1/sessions/${id}/messages?limit=2&after=4`)).toEqual({ seqs: [5], hasMore: false });
    expect(await seqs(`/v1/sessions/${id}/messages?limit=2&before=5`)).toEqual({
      seqs: [3, 4],
      hasMore: true,
    });
    expect(await seqs(`/v1/sessions/${id}/messages?limit=3&before=3`)).toEqual({
      seqs: [1, 2],
      hasMore: false,
    });
    expect(await seqs(`/v1/sessions/${id}/messages?after=1&before=4`)).toEqual({
      seqs: [2, 3],
      hasMore: false,
    });
    for (const query of ['limit=0', 'limit=1001', 'after=-1', 'before=x', 'view=model&limit=1'])
      expectProblem(await get(`/v1/sessions/${id}/messages?${query}`), 400, 'validation_error');
  });

  it('never answers more than 1,000 messages: without limit, the first page and hasMore', async () => {
    const id = await create();
    for (let i = 1; i <= 1003; i++) {
      await appendUserMessageAndQueue(stack.db, {
        tenantId: t.tenant.id,
        sessionId: id,
        parts: [{ type: 'text', text: `m${i}`, tokens: 1 }],
        wakeFrom: [],
        midRunIn: [],
      });
    }
    const page = async (url: string) => {
      const r = await get(url);
      expect(r.statusCode, r.body).toBe(200);
      const body = r.json();
      const seqs: number[] = body.messages.map((m: { info: { seq: number } }) => m.info.seq);
      return { count: seqs.length, first: seqs[0], last: seqs.at(-1), hasMore: body.hasMore };
    };
    expect(await page(`/v1/sessions/${id}/messages`)).toEqual({
      count: 1000,
      first: 1,
      last: 1000,
      hasMore: true,
    });
    expect(await page(`/v1/sessions/${id}/messages?after=1000`)).toEqual({
      count: 3,
      first: 1001,
      last: 1003,
      hasMore: false,
    });
    expect(await page(`/v1/sessions/${id}/messages?before=1004`)).toEqual({
      count: 1000,
      first: 4,
      last: 1003,
      hasMore: true,
    });
  });

  it('a page also ends at about 16 MiB of JSON (hasMore), and a larger message comes alone', async () => {
    const id = await create();
    const add = (text: string) =>
      appendUserMessageAndQueue(stack.db, {
        tenantId: t.tenant.id,
        sessionId: id,
        parts: [{ type: 'text', text, tokens: 1 }],
        wakeFrom: [],
        midRunIn: [],
      });
    // Twelve messages of 1.5 MB (18 MB in all), then one of 17 MB, then a small one.
    for (let i = 1; i <= 12; i++) await add(String(i % 10).repeat(1_500_000));
    await add('h'.repeat(17 * 1024 * 1024));
    await add('tail');
    const page = async (url: string) => {
      const r = await get(url);
      expect(r.statusCode).toBe(200);
      const body = r.json();
      expect(r.body.length).toBeLessThan(18 * 1024 * 1024); // one 17 MB message alone, at most
      return { seqs: body.messages.map((m: { info: { seq: number } }) => m.info.seq), hasMore: body.hasMore };
    };
    // 16 MiB holds eleven of the 1.5 MB messages.
    const upTo = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => from + k);
    expect(await page(`/v1/sessions/${id}/messages`)).toEqual({ seqs: upTo(1, 11), hasMore: true });
    expect(await page(`/v1/sessions/${id}/messages?after=11`)).toEqual({ seqs: [12], hasMore: true });
    expect(await page(`/v1/sessions/${id}/messages?after=12`)).toEqual({ seqs: [13], hasMore: true });
    expect(await page(`/v1/sessions/${id}/messages?after=13`)).toEqual({ seqs: [14], hasMore: false });
    // Backward: the newest that fit before the given seq.
    expect(await page(`/v1/sessions/${id}/messages?before=13`)).toEqual({ seqs: upTo(2, 12), hasMore: true });
    expect(await page(`/v1/sessions/${id}/messages?before=14`)).toEqual({ seqs: [13], hasMore: true });
  });
});

describe('POST …/messages with Prefer: wait', () => {
  it('refuses a malformed Prefer header with 400 and writes nothing; wait=0 is the usual 202', async () => {
    const id = await create();
    const before = await rowCounts(stack.db);
    for (const prefer of ['wait=abc', 'wait=-1', 'respond-async', 'wait=1000'])
      expectProblem(
        await stack.app.inject({
          method: 'POST',
          url: `/v1/sessions/${id}/messages`,
          headers: { ...t.auth, prefer },
          payload: { text: 'hi' },
        }),
        400,
        'validation_error',
      );
    expect(await rowCounts(stack.db)).toEqual(before);
    const res = await stack.app.inject({
      method: 'POST',
      url: `/v1/sessions/${id}/messages`,
      headers: { ...t.auth, prefer: 'wait=0' },
      payload: { text: 'hi' },
    });
    expect(res.statusCode, res.body).toBe(202);
  });

  it('waits are capped per key like event streams (20): past the cap the preference is not applied', async () => {
    const id = await create();
    // No worker runs here: every wait holds (wait=60) until the test fails the session's turn,
    // which answers each holder 200 with Preference-Applied. Over a real socket (an injected
    // request's raw response closes at once, which ends a wait).
    const base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
    const post = async () => {
      const res = await fetch(`${base}/v1/sessions/${id}/messages`, {
        method: 'POST',
        headers: { ...t.auth, prefer: 'wait=60', 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'hi' }),
      });
      await res.arrayBuffer();
      return { statusCode: res.status, applied: res.headers.get('preference-applied') };
    };
    /** Twenty-one at once: how many waited (200, applied) and how many were answered at once (202). */
    const round = async () => {
      const posts = Array.from({ length: 21 }, () => post());
      // No holder can finish before the turn does, so the first answer is the one past the cap,
      // and the twenty others hold a place each by then.
      expect(await Promise.race(posts)).toEqual({ statusCode: 202, applied: null });
      await setSessionStatus(stack.db, t.tenant.id, id, 'error');
      const answers = await Promise.all(posts);
      return {
        waited: answers.filter((a) => a.statusCode === 200 && a.applied === 'wait=60').length,
        atOnce: answers.filter((a) => a.statusCode === 202 && a.applied === null).length,
      };
    };
    expect(await round()).toEqual({ waited: 20, atOnce: 1 });
    // Their places were given back: twenty wait again, and the next is answered at once again.
    expect(await round()).toEqual({ waited: 20, atOnce: 1 });
  });
});

describe('DELETE /v1/sessions/:id', () => {
  it('removes the session and everything stored for it', async () => {
    const id = await create();
    const post = await stack.app.inject({
      method: 'POST',
      url: `/v1/sessions/${id}/messages`,
      headers: { ...t.auth, 'idempotency-key': 'k1' },
      payload: { text: 'to be forgotten' },
    });
    expect(post.statusCode).toBe(202);
    await stack.redis.xadd(stack.keys.events(id), '*', 'event', '{"type":"session.idle"}');
    // The append's events were published: the stream's byte count exists until the delete.
    expect(await stack.redis.exists(stack.keys.eventsBytes(id))).toBe(1);
    // Busy (queued): refused, nothing deleted.
    const before = await rowCounts(stack.db);
    expectProblem(await del(`/v1/sessions/${id}`), 409, 'session_busy');
    expect(await rowCounts(stack.db)).toEqual(before);
    // A runner holding the lock counts as busy even when the row says idle.
    await setSessionStatus(stack.db, t.tenant.id, id, 'idle');
    await stack.redis.set(stack.keys.lock(id), 'someone', 'PX', 60_000);
    expectProblem(await del(`/v1/sessions/${id}`), 409, 'session_busy');
    await stack.redis.del(stack.keys.lock(id));

    const res = await del(`/v1/sessions/${id}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ deleted: true, sessionIds: [id] });
    const after = await rowCounts(stack.db);
    expect(after.sessions).toBe(before.sessions - 1);
    expect(after.messages).toBe(before.messages - 1);
    expect(after.idempotency_keys).toBe(before.idempotency_keys - 1);
    expect(await stack.redis.exists(stack.keys.events(id))).toBe(0);
    expect(await stack.redis.exists(stack.keys.eventsBytes(id))).toBe(0);
    const jobs = await stack.queues.step.getJobs(['waiting', 'prioritized', 'delayed']);
    expect(jobs.filter((j) => j.data.sessionId === id)).toEqual([]);
    expectProblem(await get(`/v1/sessions/${id}`), 404, 'not_found');
    expectProblem(await del(`/v1/sessions/${id}`), 404, 'not_found');
    expectProblem(await del('/v1/sessions/ses_nope'), 404, 'not_found');
    expectProblem(await del(`/v1/sessions/${t.sessionId}?force=maybe`), 400, 'validation_error');
  });
});

describe('DELETE agents and tools', () => {
  it('deletes an agent; its sessions keep their configuration', async () => {
    const put = await stack.app.inject({
      method: 'PUT',
      url: '/v1/agents/temp',
      headers: t.auth,
      payload: { model: 'compatible/mock', system: 'frozen prompt' },
    });
    expect(put.statusCode).toBe(201);
    const s = await stack.app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: t.auth,
      payload: { agent: 'temp' },
    });
    const res = await del('/v1/agents/temp');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ deleted: true, name: 'temp' });
    expectProblem(await get('/v1/agents/temp'), 404, 'not_found');
    expectProblem(await del('/v1/agents/temp'), 404, 'not_found');
    const row = await stack.db
      .selectFrom('sessions')
      .select('agent')
      .where('id', '=', s.json().id)
      .executeTakeFirstOrThrow();
    expect(row.agent.system).toBe('frozen prompt');
    expect((await get(`/v1/sessions/${s.json().id}`)).statusCode).toBe(200);
  });

  it('refuses to delete a tool an agent uses (409), deletes it once unused', async () => {
    const tool = { kind: 'client', inputSchema: { type: 'object' } };
    await stack.app.inject({ method: 'PUT', url: '/v1/tools/pick', headers: t.auth, payload: tool });
    await stack.app.inject({
      method: 'PUT',
      url: '/v1/agents/picker',
      headers: t.auth,
      payload: { model: 'compatible/mock', tools: ['pick'] },
    });
    const before = await rowCounts(stack.db);
    const refused = expectProblem(await del('/v1/tools/pick'), 409, 'tool_in_use');
    expect(refused.details).toEqual({ agents: ['picker'] });
    expect(await rowCounts(stack.db)).toEqual(before);
    expect((await del('/v1/agents/picker')).statusCode).toBe(200);
    const res = await del('/v1/tools/pick');
    expect(res.statusCode, res.body).toBe(200);
    expectProblem(await get('/v1/tools/pick'), 404, 'not_found');
    expectProblem(await del('/v1/tools/bad%20name'), 404, 'not_found');
  });
});
