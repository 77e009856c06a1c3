import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// Tenants: the operator manages tenants, their keys and limits; a tenant sees
// only its own sessions, agents, tools and batches — another tenant's id answers exactly like an id
// that never existed — and a revoked key is refused everywhere.

let stack: Stack;
let a: Client;
let b: Client;
let bSession: string;
let bBatch: string;

const operator = () => ({
  authorization: `Bearer ${stack.operatorToken}`,
  'content-type': 'application/json',
});

async function admin(method: string, path: string, body?: unknown, headers = operator()) {
  const res = await fetch(`${stack.url}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  stack = await startStack();
  a = await stack.tenant('tenant-a');
  b = await stack.tenant('tenant-b');
  for (const c of [a, b]) await c.agent('helper', {});
  await b.agent('b_agent', {});
  await b.tool('b_tool', { kind: 'client', inputSchema: { type: 'object' } } as never);
  bSession = await b.session('helper');
  await b.send(bSession, 'hello from b');
  await b.waitIdle(bSession);
  const batch = await b.call('POST', '/v1/batches', {
    agent: 'helper',
    conversations: [{ messages: ['hi'] }],
  });
  expect(batch.status).toBe(201);
  bBatch = batch.body.id;
});
afterAll(() => stack?.close());

describe('tenant isolation', () => {
  it("answers 404 to every request for another tenant's sessions, agents, tools and batches", async () => {
    const requests = (ids: { session: string; agent: string; tool: string; batch: string }) => [
      ['GET', `/v1/sessions/${ids.session}`],
      ['GET', `/v1/sessions/${ids.session}/messages`],
      ['GET', `/v1/sessions/${ids.session}/messages?view=model`],
      ['GET', `/v1/sessions/${ids.session}/context`],
      ['POST', `/v1/sessions/${ids.session}/messages`, { text: 'hi' }],
      ['POST', `/v1/sessions/${ids.session}/compact`, {}],
      ['POST', `/v1/sessions/${ids.session}/revert`, { messageId: 'msg_0000000000' }],
      ['GET', `/v1/agents/${ids.agent}`],
      ['GET', `/v1/tools/${ids.tool}`],
      ['POST', '/v1/sessions', { agent: ids.agent }],
      ['POST', '/v1/batches', { agent: ids.agent, conversations: [{ messages: ['x'] }] }],
      ['GET', `/v1/batches/${ids.batch}`],
      ['GET', `/v1/batches/${ids.batch}/results`],
      ['POST', `/v1/batches/${ids.batch}/cancel`],
    ];
    const theirs = requests({ session: bSession, agent: 'b_agent', tool: 'b_tool', batch: bBatch });
    const unknown = requests({
      session: 'ses_doesnotexist',
      agent: 'nobody',
      tool: 'nothing',
      batch: 'bat_nope',
    });
    for (let i = 0; i < theirs.length; i++) {
      const [method, path, body] = theirs[i]!;
      const res = await a.call(method as string, path as string, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
      expect(res.body.error.details).toBeUndefined();
      const [m2, p2, b2] = unknown[i]!;
      const same = await a.call(m2 as string, p2 as string, b2);
      expect(same.status, `${m2} ${p2}`).toBe(404);
      expect(Object.keys(same.body.error).sort()).toEqual(Object.keys(res.body.error).sort());
    }
    // B still sees all of it, unchanged: its batch was not cancelled by A.
    expect((await b.call('GET', `/v1/sessions/${bSession}`)).status).toBe(200);
    const batch = await b.call('GET', `/v1/batches/${bBatch}`);
    expect(batch.status).toBe(200);
    expect(batch.body.status).not.toBe('cancelled');
    expect((await b.call('GET', '/v1/tools/b_tool')).status).toBe(200);
  });

  it('refuses a revoked key with 401 on every route, while the tenant’s other keys keep working', async () => {
    const extra = await admin('POST', `/v1/admin/tenants/${b.tenantId}/keys`);
    expect(extra.status).toBe(201);
    const revoked = await admin('DELETE', `/v1/admin/tenants/${b.tenantId}/keys/${extra.body.keyId}`);
    expect(revoked.status).toBe(204);
    const paths: [string, string, unknown?][] = [
      ['GET', `/v1/sessions/${bSession}`],
      ['GET', '/v1/agents'],
      ['GET', `/v1/batches/${bBatch}`],
      ['GET', `/v1/batches/${bBatch}/results`],
      ['POST', '/v1/batches', { agent: 'helper', conversations: [{ messages: ['x'] }] }],
      ['POST', `/v1/batches/${bBatch}/cancel`],
    ];
    for (const [method, path, body] of paths) {
      const res = await fetch(`${stack.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${extra.body.apiKey}`, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(((await res.json()) as any).error.code).toBe('unauthorized');
    }
    expect((await b.call('GET', `/v1/batches/${bBatch}`)).status).toBe(200);
  });
});

describe('tenant administration', () => {
  it('shows a tenant with its limits and keys, shown by prefix only', async () => {
    const res = await admin('GET', `/v1/admin/tenants/${a.tenantId}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: a.tenantId, name: 'tenant-a', limits: {} });
    expect(res.body.keys).toHaveLength(1);
    expect(res.body.keys[0]).toMatchObject({ prefix: a.apiKey.slice(0, 8), revokedAt: null });
    expect(JSON.stringify(res.body)).not.toContain(a.apiKey);
    const withRevoked = await admin('GET', `/v1/admin/tenants/${b.tenantId}`);
    expect(withRevoked.body.keys.filter((k: any) => k.revokedAt !== null)).toHaveLength(1);
  });

  it('patches limits: numbers set, null removes, others stay', async () => {
    const set = await admin('PATCH', `/v1/admin/tenants/${a.tenantId}`, {
      limits: { maxConcurrentSessions: 4, tokensPerMinute: 50_000, requestsPerMinute: 1_000 },
    });
    expect(set.status).toBe(200);
    expect(set.body.limits).toEqual({
      maxConcurrentSessions: 4,
      tokensPerMinute: 50_000,
      requestsPerMinute: 1_000,
    });
    const cleared = await admin('PATCH', `/v1/admin/tenants/${a.tenantId}`, {
      limits: { tokensPerMinute: null },
    });
    expect(cleared.body.limits).toEqual({ maxConcurrentSessions: 4, requestsPerMinute: 1_000 });
    expect((await admin('GET', `/v1/admin/tenants/${a.tenantId}`)).body.limits).toEqual(cleared.body.limits);
    await admin('PATCH', `/v1/admin/tenants/${a.tenantId}`, {
      limits: { maxConcurrentSessions: null, requestsPerMinute: null },
    });
  });

  it('refuses bad patches with 400, unknown tenants with 404, and non-operators with 401, changing nothing', async () => {
    const url = `/v1/admin/tenants/${b.tenantId}`;
    const before = (await admin('GET', url)).body;
    for (const body of [
      { limits: { maxConcurrentSessions: 0 } },
      { limits: { tokensPerMinute: -1 } },
      { limits: { requestsPerMinute: 1.5 } },
      { limits: { burst: 3 } },
      { limits: 'fast' },
      { name: 'renamed' },
      {},
    ]) {
      const res = await admin('PATCH', url, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_error');
    }
    expect((await admin('PATCH', '/v1/admin/tenants/ten_unknown', { limits: {} })).status).toBe(404);
    expect((await admin('GET', '/v1/admin/tenants/ten_unknown')).status).toBe(404);
    const asTenant = { authorization: `Bearer ${b.apiKey}`, 'content-type': 'application/json' };
    expect((await admin('PATCH', url, { limits: { maxConcurrentSessions: 1 } }, asTenant)).status).toBe(401);
    expect((await admin('GET', url, undefined, asTenant)).status).toBe(401);
    expect((await admin('GET', url)).body).toEqual(before);
  });
});
