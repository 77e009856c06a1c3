import { randomBytes } from 'node:crypto';
import { secretBoxFromKey } from '@loopline/egress';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  type Stack,
  startStack,
  stepJobs,
  tenantWithSession,
} from '../../apps/gateway/test/helpers.ts';

// Tenant isolation over every route of the OpenAPI document, found by iterating /docs/json (a new
// route is covered without editing this test): for each tenant operation with path parameters,
// tenant A presenting tenant B's ids gets what an id that never existed gets (404 not_found; a PUT
// of a name creates A's own resource), and nothing of anyone else changes: the whole database
// (every table's content digest, A's own rows aside only for such a PUT), the step queue and B's
// event stream are as they were. Over real HTTP.

interface Operation {
  security?: Array<Record<string, unknown>>;
  parameters?: Array<{ in: string; name: string }>;
  requestBody?: { content?: Record<string, { schema?: { example?: unknown } }> };
}

let stack: Stack;
let base: string;
let doc: { paths: Record<string, Record<string, Operation>> };
let a: Awaited<ReturnType<typeof tenantWithSession>>;
let b: Awaited<ReturnType<typeof tenantWithSession>>;
/** B's ids by the path segment that names the resource (`sessions` → B's session id, …). */
const foreign: Record<string, string> = {};
/** Ids of the same shape that exist for nobody. */
const madeUp: Record<string, string> = {};

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

async function call(method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...bearer(key), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
}

/** Every table's row count and content digest; rows of `exceptTenant` left out where tables have a tenant. */
async function databaseDigest(exceptTenant?: string): Promise<Record<string, string>> {
  const tables = await sql<{ table_name: string; has_tenant: boolean }>`
    select t.table_name, exists (
      select 1 from information_schema.columns c
      where c.table_schema = 'public' and c.table_name = t.table_name and c.column_name = 'tenant_id'
    ) as has_tenant
    from information_schema.tables t
    where t.table_schema = 'public' and t.table_type = 'BASE TABLE' and t.table_name not like 'kysely_%'
    order by t.table_name`.execute(stack.db);
  const out: Record<string, string> = {};
  for (const { table_name, has_tenant } of tables.rows) {
    const filter =
      has_tenant && exceptTenant ? sql`where x.tenant_id is distinct from ${exceptTenant}` : sql``;
    const row = await sql<{ n: string; digest: string | null }>`
      select count(*)::text as n, md5(string_agg(x::text, ',' order by x::text)) as digest
      from ${sql.table(table_name)} x ${filter}`.execute(stack.db);
    out[table_name] = `${row.rows[0]!.n}:${row.rows[0]!.digest ?? ''}`;
  }
  return out;
}

async function redisState() {
  return {
    stepJobs: (await stepJobs(stack.queues)).length,
    bEvents: await stack.redis.xlen(stack.keys.events(b.sessionId)),
  };
}

/** The path with each `{param}` replaced by the id the segment before it names. */
function fill(path: string, ids: Record<string, string>): string | undefined {
  let missing = false;
  const filled = path.replace(/\{(\w+)\}/g, (_m, _name: string, offset: number) => {
    const segment = path.slice(0, offset).split('/').filter(Boolean).at(-1) ?? '';
    const id = ids[segment];
    if (id === undefined) missing = true;
    return id ?? '';
  });
  return missing ? undefined : filled;
}

beforeAll(async () => {
  // A secrets box, so that webhook subscriptions (signed) can be made.
  stack = await startStack('openapi_isolation', { egress: { secrets: secretBoxFromKey(randomBytes(32)) } });
  base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
  a = await tenantWithSession(stack.app, 'tenant-a');
  b = await tenantWithSession(stack.app, 'tenant-b');
  const tool = await call('PUT', '/v1/tools/b_tool', b.apiKey, {
    kind: 'client',
    inputSchema: { type: 'object' },
  });
  expect(tool.status).toBe(201);
  const agent = await call('PUT', '/v1/agents/b_agent', b.apiKey, {
    model: 'compatible/mock',
    tools: ['b_tool'],
  });
  expect(agent.status).toBe(201);
  const batch = await call('POST', '/v1/batches', b.apiKey, {
    agent: 'b_agent',
    conversations: [{ messages: ['hi'] }],
  });
  expect(batch.status, JSON.stringify(batch.body)).toBeLessThan(300);
  const hook = await call('PUT', '/v1/webhooks/b_hook', b.apiKey, {
    url: 'https://hooks.example.com/b',
    events: ['session.idle'],
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  const message = await call('POST', `/v1/sessions/${b.sessionId}/messages`, b.apiKey, { text: 'B only' });
  expect(message.status).toBe(202);
  Object.assign(foreign, {
    sessions: b.sessionId,
    chat: b.sessionId, // /v1/chat/{id}/stream: the chat id is the session id
    agents: 'b_agent',
    tools: 'b_tool',
    batches: batch.body.id as string,
    webhooks: 'b_hook',
    deliveries: 'dlv_00000000000000000000', // under B's subscription name, A finds nothing either way
  });
  const fake = (id: string) => id.replace(/_(.*)$/, (_m, rest: string) => `_${'0'.repeat(rest.length)}`);
  Object.assign(madeUp, {
    sessions: fake(b.sessionId),
    chat: fake(b.sessionId),
    agents: 'never_made',
    tools: 'never_made',
    batches: fake(foreign.batches!),
    webhooks: 'never_made',
    deliveries: 'dlv_00000000000000000000',
  });
  doc = (await (await fetch(`${base}/docs/json`)).json()) as typeof doc;
});
afterAll(async () => {
  await stack?.close();
});

/** Tenant operations (not the operator's) with path parameters, from the document. */
function tenantOperations() {
  return Object.entries(doc.paths)
    .flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([method]) => METHODS.includes(method) && path.includes('{'))
        .filter(([, op]) => !(op.security ?? []).some((s) => 'operator' in s))
        .map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
    )
    .sort((x, y) => Number(x.method === 'PUT') - Number(y.method === 'PUT')); // a PUT makes A's own namesake: last
}

describe("tenant A presenting tenant B's ids, on every route of the OpenAPI document", () => {
  it('finds the routes in the document (and knows an id of B for every path parameter)', () => {
    const ops = tenantOperations();
    expect(ops.length).toBeGreaterThanOrEqual(15);
    const unknown = ops
      .filter((o) => fill(o.path, foreign) === undefined)
      .map((o) => `${o.method} ${o.path}`);
    // A route over a new kind of resource: give B one in beforeAll and name it in `foreign`.
    expect(unknown).toEqual([]);
  });

  it('answers like an unknown id (404, or A’s own resource for a PUT of a name) and changes nothing', async () => {
    const failures: string[] = [];
    for (const { method, path, op } of tenantOperations()) {
      const body = op.requestBody?.content?.['application/json']?.schema?.example;
      const foreignPath = fill(path, foreign)!;
      const unknownPath = fill(path, madeUp)!;
      const name = `${method} ${path}`;
      const createsOwn = method === 'PUT';
      const dbBefore = await databaseDigest(createsOwn ? a.tenant.id : undefined);
      const redisBefore = await redisState();

      const got = await call(method, foreignPath, a.apiKey, body);
      const unknown = await call(method, unknownPath, a.apiKey, body);
      if (!createsOwn && got.status !== 404)
        failures.push(`${name}: ${got.status} ${JSON.stringify(got.body)}`);
      if (got.status !== unknown.status)
        failures.push(`${name}: B's id ${got.status}, unknown id ${unknown.status}`);
      if (got.status === 404) {
        expect(got.body.error.code, name).toBe('not_found');
        expect(Object.keys(got.body.error).sort(), name).toEqual(Object.keys(unknown.body.error).sort());
        expect(JSON.stringify(got.body), name).not.toContain(b.tenant.id);
      }
      expect(await databaseDigest(createsOwn ? a.tenant.id : undefined), name).toEqual(dbBefore);
      expect(await redisState(), name).toEqual(redisBefore);
    }
    expect(failures).toEqual([]);
  });

  it("B's own requests still work on the same routes (the ids are real)", async () => {
    expect((await call('GET', `/v1/sessions/${b.sessionId}`, b.apiKey)).status).toBe(200);
    expect((await call('GET', `/v1/batches/${foreign.batches}`, b.apiKey)).status).toBe(200);
    expect((await call('GET', '/v1/agents/b_agent', b.apiKey)).status).toBe(200);
    expect((await call('GET', '/v1/tools/b_tool', b.apiKey)).status).toBe(200);
  });
});
