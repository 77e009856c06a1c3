import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, rowCounts, type Stack, startStack, stepJobs, tenantWithSession } from './helpers.ts';

// Tenants never see each other: another tenant's session, agent or tool is exactly as unknown
// as an id that never existed (same status, same code, same message shape), and nothing is written.

let stack: Stack;
let a: Awaited<ReturnType<typeof tenantWithSession>>;
let b: Awaited<ReturnType<typeof tenantWithSession>>;

beforeAll(async () => {
  stack = await startStack('isolation');
  a = await tenantWithSession(stack.app, 'tenant-a');
  b = await tenantWithSession(stack.app, 'tenant-b');
  const tool = await stack.app.inject({
    method: 'PUT',
    url: '/v1/tools/b_only',
    headers: b.auth,
    payload: { kind: 'client', inputSchema: { type: 'object' } },
  });
  expect(tool.statusCode, tool.body).toBe(201);
  const agent = await stack.app.inject({
    method: 'PUT',
    url: '/v1/agents/b_agent',
    headers: b.auth,
    payload: { model: 'compatible/mock' },
  });
  expect(agent.statusCode, agent.body).toBe(201);
});
afterAll(async () => {
  await stack?.close();
});

describe("tenant A asking for tenant B's things", () => {
  const requests = () => [
    { method: 'GET' as const, url: `/v1/sessions/${b.sessionId}` },
    { method: 'GET' as const, url: `/v1/sessions/${b.sessionId}/messages` },
    { method: 'GET' as const, url: `/v1/sessions/${b.sessionId}/messages?view=model` },
    { method: 'GET' as const, url: `/v1/sessions/${b.sessionId}/events` },
    { method: 'POST' as const, url: `/v1/sessions/${b.sessionId}/messages`, payload: { text: 'hi' } },
    { method: 'POST' as const, url: `/v1/sessions/${b.sessionId}/compact`, payload: {} },
    { method: 'GET' as const, url: `/v1/sessions/${b.sessionId}/context` },
    {
      method: 'POST' as const,
      url: `/v1/sessions/${b.sessionId}/revert`,
      payload: { messageId: 'msg_0000000000' },
    },
    { method: 'GET' as const, url: '/v1/agents/b_agent' },
    { method: 'GET' as const, url: '/v1/tools/b_only' },
    { method: 'POST' as const, url: '/v1/sessions', payload: { agent: 'b_agent' } },
    { method: 'GET' as const, url: `/v1/sessions/${b.sessionId}/children` },
    { method: 'DELETE' as const, url: `/v1/sessions/${b.sessionId}` },
    { method: 'DELETE' as const, url: `/v1/sessions/${b.sessionId}?force=true` },
    { method: 'DELETE' as const, url: '/v1/agents/b_agent' },
    { method: 'DELETE' as const, url: '/v1/tools/b_only' },
    { method: 'GET' as const, url: `/v1/chat/${b.sessionId}/stream` },
    {
      method: 'POST' as const,
      url: '/v1/chat',
      payload: {
        id: b.sessionId,
        messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
      },
    },
  ];

  it('gets 404 not_found for each, shaped like an unknown id, and writes nothing', async () => {
    const before = await rowCounts(stack.db);
    const jobs = (await stepJobs(stack.queues)).length;
    for (const req of requests()) {
      const res = await stack.app.inject({ ...req, headers: a.auth });
      const error = expectProblem(res, 404, 'not_found');
      expect(error.details).toBeUndefined();
      // The same request with a made-up id answers the same way.
      const fake = req.url
        .replace(b.sessionId, 'ses_madeup')
        .replace('b_agent', 'zz_agent')
        .replace('b_only', 'zz_tool');
      const unknown = await stack.app.inject({ ...req, url: fake, headers: a.auth });
      expect(unknown.statusCode).toBe(404);
      expect(Object.keys(unknown.json().error).sort()).toEqual(Object.keys(error).sort());
    }
    expect(await rowCounts(stack.db)).toEqual(before);
    expect((await stepJobs(stack.queues)).length).toBe(jobs);
  });

  it('does not list them', async () => {
    const agents = await stack.app.inject({ method: 'GET', url: '/v1/agents', headers: a.auth });
    expect(agents.json().agents.map((x: { name: string }) => x.name)).toEqual(['helper']);
    const tools = await stack.app.inject({ method: 'GET', url: '/v1/tools', headers: a.auth });
    expect(tools.json().tools).toEqual([]);
    const sessions = await stack.app.inject({ method: 'GET', url: '/v1/sessions', headers: a.auth });
    expect(sessions.json().sessions.map((x: { id: string }) => x.id)).toEqual([a.sessionId]);
    const children = await stack.app.inject({
      method: 'GET',
      url: `/v1/sessions?parent=${b.sessionId}`,
      headers: a.auth,
    });
    expect(children.json().sessions).toEqual([]);
  });

  it("cannot name B's tool in its own agent", async () => {
    const res = await stack.app.inject({
      method: 'PUT',
      url: '/v1/agents/uses_b',
      headers: a.auth,
      payload: { model: 'compatible/mock', tools: ['b_only'] },
    });
    expectProblem(res, 400, 'validation_error');
  });

  it('can still use its own session', async () => {
    const res = await stack.app.inject({
      method: 'GET',
      url: `/v1/sessions/${a.sessionId}`,
      headers: a.auth,
    });
    expect(res.statusCode).toBe(200);
  });
});
