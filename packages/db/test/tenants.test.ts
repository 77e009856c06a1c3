import { AgentConfig, ToolConfig } from '@loopline/core';
import { sql } from 'kysely';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSession, makeTenant, sleep } from '../../testkit/src/index.ts';
import {
  authenticateApiKey,
  authenticateApiKeyCached,
  createApiKey,
  createSession,
  getAgent,
  getSession,
  getTenant,
  getTenantLimits,
  getTenantLimitsCached,
  getToolsByName,
  hashApiKey,
  listApiKeys,
  listSessions,
  NotFoundError,
  putAgent,
  putTool,
  revokeApiKey,
  setSessionStatus,
  transitionSessionStatus,
  updateTenantLimits,
} from '../src/index.ts';

// Tenants, API keys, agents, tools and session rows.

describe('api keys', () => {
  test('keys are ll_ + 32 base62 chars, stored as sha256 only', async ({ pg }) => {
    const { tenant, apiKey, keyId } = await makeTenant(pg.db, 'acme');
    expect(apiKey).toMatch(/^ll_[0-9A-Za-z]{32}$/);
    expect(await getTenant(pg.db, tenant.id)).toMatchObject({ name: 'acme' });
    const { rows } = await sql<Record<string, unknown>>`select * from api_keys where id = ${keyId}`.execute(
      pg.db,
    );
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain(apiKey);
    expect(stored).not.toContain(apiKey.slice(8));
    expect(rows[0]).toMatchObject({ key_hash: hashApiKey(apiKey), prefix: apiKey.slice(0, 8) });
    expect(await authenticateApiKey(pg.db, apiKey)).toEqual({ tenantId: tenant.id, keyId, limits: {} });
  });

  test("authenticating a key returns the tenant's limits; patches merge, null removes", async ({ pg }) => {
    const { tenant, apiKey } = await makeTenant(pg.db);
    expect(await getTenantLimits(pg.db, tenant.id)).toEqual({});
    await updateTenantLimits(pg.db, tenant.id, { maxConcurrentSessions: 3, tokensPerMinute: 1000 });
    const patched = await updateTenantLimits(pg.db, tenant.id, {
      tokensPerMinute: null,
      requestsPerMinute: 5,
    });
    expect(patched?.settings).toEqual({ limits: { maxConcurrentSessions: 3, requestsPerMinute: 5 } });
    expect(await getTenantLimits(pg.db, tenant.id)).toEqual({
      maxConcurrentSessions: 3,
      requestsPerMinute: 5,
    });
    expect((await authenticateApiKey(pg.db, apiKey))?.limits).toEqual({
      maxConcurrentSessions: 3,
      requestsPerMinute: 5,
    });
    expect(await updateTenantLimits(pg.db, 'ten_unknown', { tokensPerMinute: 1 })).toBeUndefined();
  });

  test('unknown and revoked keys fail; other keys keep working', async ({ pg }) => {
    const { tenant, apiKey, keyId } = await makeTenant(pg.db);
    const second = await createApiKey(pg.db, tenant.id);
    expect(await authenticateApiKey(pg.db, `${apiKey}x`)).toBeUndefined();
    expect(await authenticateApiKey(pg.db, '')).toBeUndefined();
    const other = await makeTenant(pg.db);
    expect(await revokeApiKey(pg.db, other.tenant.id, keyId)).toBe(false); // not its key
    expect(await revokeApiKey(pg.db, tenant.id, keyId)).toBe(true);
    expect(await revokeApiKey(pg.db, tenant.id, keyId)).toBe(false);
    expect(await authenticateApiKey(pg.db, apiKey)).toBeUndefined();
    expect(await authenticateApiKey(pg.db, second.apiKey)).toEqual({
      tenantId: tenant.id,
      keyId: second.keyId,
      limits: {},
    });
    const keys = await listApiKeys(pg.db, tenant.id);
    expect(keys.map((k) => [k.id, k.revokedAt !== null])).toEqual([
      [keyId, true],
      [second.keyId, false],
    ]);
  });

  test('the auth cache: revoking or a limits change in this process applies at once; others within the TTL', async ({
    pg,
  }) => {
    const { tenant, apiKey, keyId } = await makeTenant(pg.db);
    const ttl = 60_000;
    expect(await authenticateApiKeyCached(pg.db, apiKey, ttl)).toMatchObject({ keyId, limits: {} });
    // A change this process did not make (another gateway's): served from the cache until the TTL.
    await sql`update tenants set settings = '{"limits":{"requestsPerMinute":5}}' where id = ${tenant.id}`.execute(
      pg.db,
    );
    expect((await authenticateApiKeyCached(pg.db, apiKey, ttl))?.limits).toEqual({});
    expect((await authenticateApiKeyCached(pg.db, apiKey, 0))?.limits).toEqual({ requestsPerMinute: 5 });
    // Through this process: at once.
    await updateTenantLimits(pg.db, tenant.id, { requestsPerMinute: 7 });
    expect((await authenticateApiKeyCached(pg.db, apiKey, ttl))?.limits).toEqual({ requestsPerMinute: 7 });
    expect(await revokeApiKey(pg.db, tenant.id, keyId)).toBe(true);
    expect(await authenticateApiKeyCached(pg.db, apiKey, ttl)).toBeUndefined();
    // A key revoked by another process: refused once the TTL is over.
    const second = await createApiKey(pg.db, tenant.id);
    expect(await authenticateApiKeyCached(pg.db, second.apiKey, 50)).toBeDefined();
    await sql`update api_keys set revoked_at = now() where id = ${second.keyId}`.execute(pg.db);
    await sleep(60); // on purpose: the 50 ms cache TTL must run out
    expect(await authenticateApiKeyCached(pg.db, second.apiKey, 50)).toBeUndefined();
  });

  test("the worker's tenant limits cache: a change through this process applies at once", async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db);
    expect(await getTenantLimitsCached(pg.db, tenant.id, 60_000)).toEqual({});
    await sql`update tenants set settings = '{"limits":{"tokensPerMinute":9}}' where id = ${tenant.id}`.execute(
      pg.db,
    );
    expect(await getTenantLimitsCached(pg.db, tenant.id, 60_000)).toEqual({}); // within the TTL
    await updateTenantLimits(pg.db, tenant.id, { maxConcurrentSessions: 2 });
    expect(await getTenantLimitsCached(pg.db, tenant.id, 60_000)).toEqual({
      tokensPerMinute: 9,
      maxConcurrentSessions: 2,
    });
    expect(await getTenantLimits(pg.db, tenant.id)).toEqual({ tokensPerMinute: 9, maxConcurrentSessions: 2 });
  });
});

describe('agents and tools', () => {
  test('putAgent creates, bumps the version on change, and is a no-op when unchanged', async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db);
    const config = AgentConfig.parse({ model: 'openai/gpt-4o', tools: ['search'] });
    const first = await putAgent(pg.db, tenant.id, 'build', config);
    expect(first).toMatchObject({ created: true, agent: { name: 'build', version: 1, config } });
    const same = await putAgent(
      pg.db,
      tenant.id,
      'build',
      AgentConfig.parse({ tools: ['search'], model: 'openai/gpt-4o' }),
    );
    expect(same).toMatchObject({ created: false, agent: { version: 1 } });
    const changed = await putAgent(pg.db, tenant.id, 'build', { ...config, system: 'be terse' });
    expect(changed).toMatchObject({ created: false, agent: { version: 2, config: { system: 'be terse' } } });
    expect(changed.agent.updatedAt.getTime()).toBeGreaterThanOrEqual(first.agent.createdAt.getTime());
    expect((await getAgent(pg.db, tenant.id, 'build'))?.config).toEqual(
      AgentConfig.parse(changed.agent.config),
    );
  });

  test('putTool and getToolsByName', async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db);
    const webhook = ToolConfig.parse({
      kind: 'webhook',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      url: 'https://example.com/hook',
    });
    expect((await putTool(pg.db, tenant.id, 'search', webhook)).created).toBe(true);
    await putTool(
      pg.db,
      tenant.id,
      'ask',
      ToolConfig.parse({ kind: 'client', inputSchema: { type: 'object' } }),
    );
    const updated = await putTool(pg.db, tenant.id, 'search', { ...webhook, timeoutMs: 5_000 });
    expect(updated.tool.version).toBe(2);
    const found = await getToolsByName(pg.db, tenant.id, ['search', 'missing', 'ask']);
    expect(found.map((t) => t.name)).toEqual(['ask', 'search']);
    expect(ToolConfig.parse(found[1]?.config)).toEqual(found[1]?.config);
    expect(await getToolsByName(pg.db, tenant.id, [])).toEqual([]);
  });
});

describe('sessions', () => {
  test('createSession keeps the resolved agent config and defaults', async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db);
    const agent = AgentConfig.parse({ model: 'compatible/mock', maxSteps: 3 });
    const session = await createSession(pg.db, {
      tenantId: tenant.id,
      agentName: 'build',
      agent,
      metadata: { user: 'u1', tags: ['a', 'b'] },
    });
    expect(session).toMatchObject({
      tenantId: tenant.id,
      agentName: 'build',
      agent,
      status: 'idle',
      statusDetail: null,
      fence: 0,
      stepCount: 0,
      boundarySeq: null,
      lastUsage: null,
      tokenRatio: null,
      compactionCount: 0,
      lastCompactionAt: null,
      error: null,
      title: null,
      parentSessionId: null,
      metadata: { user: 'u1', tags: ['a', 'b'] },
    });
    expect(await getSession(pg.db, tenant.id, session.id)).toEqual(session);
    const child = await makeSession(pg.db, tenant.id, { parentSessionId: session.id });
    expect(child.parentSessionId).toBe(session.id);
    const stranger = await makeTenant(pg.db);
    await expect(
      makeSession(pg.db, stranger.tenant.id, { parentSessionId: session.id }),
    ).rejects.toBeInstanceOf(NotFoundError);
  });

  test('status writes set detail and error together; transitions compare and set', async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db);
    const session = await makeSession(pg.db, tenant.id);
    await setSessionStatus(pg.db, tenant.id, session.id, 'error', 'step failed', {
      name: 'APIError',
      message: 'bad gateway',
      data: { status: 502 },
    });
    expect(await getSession(pg.db, tenant.id, session.id)).toMatchObject({
      status: 'error',
      statusDetail: 'step failed',
      error: { name: 'APIError', data: { status: 502 } },
    });
    expect(await transitionSessionStatus(pg.db, tenant.id, session.id, ['idle'], 'queued')).toBe(false);
    expect(await transitionSessionStatus(pg.db, tenant.id, session.id, ['idle', 'error'], 'queued')).toBe(
      true,
    );
    expect(await getSession(pg.db, tenant.id, session.id)).toMatchObject({
      status: 'queued',
      statusDetail: null,
      error: null,
    });
  });

  test('listSessions pages newest first', async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db);
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await makeSession(pg.db, tenant.id));
    const newestFirst = made.map((s) => s.id).reverse();
    const page1 = await listSessions(pg.db, tenant.id, { limit: 2 });
    expect(page1.map((s) => s.id)).toEqual(newestFirst.slice(0, 2));
    const page2 = await listSessions(pg.db, tenant.id, { limit: 2, before: page1[1]?.id });
    expect(page2.map((s) => s.id)).toEqual(newestFirst.slice(2, 4));
  });
});
