import { AgentConfig } from '@loopline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, expectProblem, rowCounts, type Stack, startStack } from './helpers.ts';

// Agents, tools and sessions: validation before any write, tool references, resolved configs.

let stack: Stack;
let auth: { authorization: string };

beforeAll(async () => {
  stack = await startStack('agents');
  auth = { authorization: `Bearer ${(await createTenant(stack.app, 'acme')).apiKey}` };
});
afterAll(async () => {
  await stack?.close();
});

const put = (kind: 'agents' | 'tools', name: string, payload: unknown) =>
  stack.app.inject({ method: 'PUT', url: `/v1/${kind}/${name}`, headers: auth, payload: payload as object });

describe('tools', () => {
  it('creates (201), updates (200) and reads a webhook tool', async () => {
    const config = {
      kind: 'webhook',
      description: 'Search',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
      url: 'https://tools.example.com/search',
    };
    const created = await put('tools', 'search', config);
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({
      name: 'search',
      version: 1,
      config: { ...config, timeoutMs: 30_000 },
    });
    const updated = await put('tools', 'search', { ...config, description: 'Search the web' });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json().version).toBe(2);
    const got = await stack.app.inject({ method: 'GET', url: '/v1/tools/search', headers: auth });
    expect(got.json().config.description).toBe('Search the web');
    const list = await stack.app.inject({ method: 'GET', url: '/v1/tools', headers: auth });
    expect(list.json().tools.map((t: { name: string }) => t.name)).toEqual(['search']);
  });

  it('refuses bad tool configs with 400 and writes nothing', async () => {
    const before = await rowCounts(stack.db);
    const bad: unknown[] = [
      {},
      { kind: 'webhook', inputSchema: { type: 'object' } },
      { kind: 'webhook', inputSchema: { type: 'object' }, url: 'ftp://files.example.com/x' },
      { kind: 'webhook', inputSchema: { type: 'object' }, url: 'file:///etc/passwd' },
      { kind: 'webhook', inputSchema: { type: 'object' }, url: 'not a url' },
      { kind: 'client', inputSchema: { type: 'string' } },
      { kind: 'carrier-pigeon', inputSchema: { type: 'object' } },
      { kind: 'client', inputSchema: { type: 'object' }, timeoutMs: -1 },
      [],
    ];
    for (const payload of bad) expectProblem(await put('tools', 'bad', payload), 400, 'validation_error');
    expectProblem(await put('tools', 'bad name!', { kind: 'client', inputSchema: { type: 'object' } }), 400);
    expectProblem(
      await put('tools', 'x'.repeat(65), { kind: 'client', inputSchema: { type: 'object' } }),
      400,
    );
    expect(await rowCounts(stack.db)).toEqual(before);
  });

  it('404 for unknown tools', async () => {
    expectProblem(
      await stack.app.inject({ method: 'GET', url: '/v1/tools/nope', headers: auth }),
      404,
      'not_found',
    );
    expectProblem(
      await stack.app.inject({ method: 'GET', url: '/v1/tools/%00', headers: auth }),
      404,
      'not_found',
    );
  });
});

describe('agents', () => {
  it('creates (201) with defaults applied, updates (200), reads and lists', async () => {
    const created = await put('agents', 'researcher', {
      model: 'openai/gpt-4.1-mini',
      system: 'Be careful.',
      tools: ['search', 'read_output'],
      compaction: { triggerRatio: 0.8 },
    });
    expect(created.statusCode, created.body).toBe(201);
    const body = created.json();
    expect(body.config).toEqual(
      AgentConfig.parse({
        model: 'openai/gpt-4.1-mini',
        system: 'Be careful.',
        tools: ['search', 'read_output'],
        compaction: { triggerRatio: 0.8 },
      }),
    );
    const updated = await put('agents', 'researcher', {
      model: 'openai/gpt-4.1-mini',
      system: 'Be careful.',
      tools: ['search', 'read_output'],
      compaction: { triggerRatio: 0.8 },
      maxSteps: 5,
    });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json().config.maxSteps).toBe(5);
    const got = await stack.app.inject({ method: 'GET', url: '/v1/agents/researcher', headers: auth });
    expect(got.statusCode).toBe(200);
    const list = await stack.app.inject({ method: 'GET', url: '/v1/agents', headers: auth });
    expect(list.json().agents).toHaveLength(1);
  });

  it('refuses an agent naming an unknown tool with 400 and details', async () => {
    const before = await rowCounts(stack.db);
    const res = await put('agents', 'broken', {
      model: 'openai/gpt-4o',
      tools: ['search', 'nope', 'also_nope'],
    });
    const error = expectProblem(res, 400, 'validation_error');
    expect(error.details).toMatchObject({ unknownTools: ['nope', 'also_nope'] });
    expect((error.details as { issues: { path: string }[] }).issues.map((i) => i.path)).toEqual([
      '/tools/1',
      '/tools/2',
    ]);
    expect(await rowCounts(stack.db)).toEqual(before);
  });

  it('refuses bad agent configs with 400 and writes nothing', async () => {
    const before = await rowCounts(stack.db);
    const bad: unknown[] = [
      {},
      { model: 'gpt-4o' },
      { model: 'openai/gpt-4o', maxSteps: 0 },
      { model: 'openai/gpt-4o', maxSteps: 'many' },
      { model: 'openai/gpt-4o', compaction: { triggerRatio: 1.5 } },
      { model: 'openai/gpt-4o', midRunMessages: 'ignore' },
      { model: 'openai/gpt-4o', limits: { context: -1, output: 10 } },
      { model: 'openai/gpt-4o', unknownField: true },
      { model: 'openai/gpt-4o', tools: 'search' },
    ];
    for (const payload of bad) {
      const res = await put('agents', 'bad', payload);
      const error = expectProblem(res, 400, 'validation_error');
      expect((error.details as { issues: unknown[] }).issues.length).toBeGreaterThan(0);
    }
    expect(await rowCounts(stack.db)).toEqual(before);
  });

  it('404 for unknown agents and impossible names', async () => {
    for (const name of ['nope', 'bad%20name', 'x'.repeat(100)]) {
      expectProblem(
        await stack.app.inject({ method: 'GET', url: `/v1/agents/${name}`, headers: auth }),
        404,
        'not_found',
      );
    }
  });
});

describe('sessions', () => {
  it('creates a session with the agent config resolved with overrides', async () => {
    const res = await stack.app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: auth,
      payload: {
        agent: 'researcher',
        overrides: {
          maxSteps: 3,
          compaction: { tailTurns: 4 },
          limits: { context: 100_000, output: 32_000 },
        },
        metadata: { ticket: 'T-1' },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const view = res.json();
    expect(view).toMatchObject({
      agent: 'researcher',
      status: 'idle',
      statusDetail: null,
      error: null,
      stepCount: 0,
      compaction: { count: 0, lastAt: null },
      metadata: { ticket: 'T-1' },
    });
    // docs/context.md §2: 100k/–/32k → usable 68k; no triggerRatio override here → agent's 0.8 kept.
    expect(view.tokens.usable).toBe(68_000);
    expect(view.tokens.trigger).toBe(54_400);
    expect(view.tokens.background).toBe(Math.floor(54_400 * 0.8));
    expect(view.tokens.used).toBeGreaterThan(0); // the system prompt

    const row = await stack.db
      .selectFrom('sessions')
      .select('agent')
      .where('id', '=', view.id)
      .executeTakeFirstOrThrow();
    expect(row.agent.maxSteps).toBe(3);
    expect(row.agent.compaction.tailTurns).toBe(4);
    expect(row.agent.compaction.triggerRatio).toBe(0.8); // merged, not replaced
    expect(row.agent.system).toBe('Be careful.');

    const got = await stack.app.inject({ method: 'GET', url: `/v1/sessions/${view.id}`, headers: auth });
    expect(got.statusCode).toBe(200);
    expect(got.json()).toEqual(view);
  });

  it('404 for an unknown agent, 400 for bad overrides; nothing written', async () => {
    const before = await rowCounts(stack.db);
    const post = (payload: unknown) =>
      stack.app.inject({ method: 'POST', url: '/v1/sessions', headers: auth, payload: payload as object });
    expectProblem(await post({ agent: 'nope' }), 404, 'not_found');
    expectProblem(await post({}), 400, 'validation_error');
    expectProblem(await post({ agent: 'researcher', overrides: { maxSteps: -1 } }), 400, 'validation_error');
    expectProblem(
      await post({ agent: 'researcher', overrides: { compaction: { triggerRatio: 2 } } }),
      400,
      'validation_error',
    );
    expectProblem(await post({ agent: 'researcher', overrides: { bogus: 1 } }), 400, 'validation_error');
    expectProblem(
      await post({ agent: 'researcher', overrides: { tools: ['missing'] } }),
      400,
      'validation_error',
    );
    expectProblem(await post({ agent: 'researcher', metadata: 'x' }), 400, 'validation_error');
    expect(await rowCounts(stack.db)).toEqual(before);
  });
});
