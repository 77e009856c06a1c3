import { ToolConfig } from '@loopline/core';
import { putTool } from '@loopline/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, expectProblem, type Stack, startStack } from './helpers.ts';

// GET /v1/agents and /v1/tools: every one of the tenant's (bounded by its caps), or pages by name
// with ?limit and ?cursor; another tenant's never appear; a bad page size or cursor is a 400.

let stack: Stack;
let mine: { authorization: string };
let theirs: { authorization: string };

const AGENTS = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
const TOOL = {
  kind: 'webhook',
  description: 'Search',
  inputSchema: { type: 'object', properties: {} },
  url: 'https://tools.example.com/search',
};

beforeAll(async () => {
  stack = await startStack('named-pages');
  mine = { authorization: `Bearer ${(await createTenant(stack.app, 'pages-a')).apiKey}` };
  theirs = { authorization: `Bearer ${(await createTenant(stack.app, 'pages-b')).apiKey}` };
  for (const name of AGENTS) {
    const res = await stack.app.inject({
      method: 'PUT',
      url: `/v1/agents/${name}`,
      headers: mine,
      payload: { model: 'openai/gpt-4o' },
    });
    expect(res.statusCode, res.body).toBe(201);
  }
  for (const name of ['t1', 't2', 't3']) {
    const res = await stack.app.inject({
      method: 'PUT',
      url: `/v1/tools/${name}`,
      headers: mine,
      payload: TOOL,
    });
    expect(res.statusCode, res.body).toBe(201);
  }
  // The other tenant's agent sorts between mine: it must never show up in my pages.
  const other = await stack.app.inject({
    method: 'PUT',
    url: '/v1/agents/bz_other',
    headers: theirs,
    payload: { model: 'openai/gpt-4o' },
  });
  expect(other.statusCode, other.body).toBe(201);
});
afterAll(async () => {
  await stack?.close();
});

const list = (url: string, headers = mine) => stack.app.inject({ method: 'GET', url, headers });

describe('listing agents and tools', () => {
  it('without limit: all of them by name, nextCursor null', async () => {
    const res = await list('/v1/agents');
    expect(res.statusCode).toBe(200);
    expect(res.json().agents.map((a: { name: string }) => a.name)).toEqual(AGENTS);
    expect(res.json().nextCursor).toBeNull();
    const tools = await list('/v1/tools');
    expect(tools.json()).toMatchObject({ nextCursor: null });
    expect(tools.json().tools).toHaveLength(3);
  });

  it('with limit: pages by name, each nextCursor leading to the next, null on the last', async () => {
    const names: string[][] = [];
    let cursor: string | null = null;
    do {
      const res = await list(`/v1/agents?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.statusCode, res.body).toBe(200);
      names.push(res.json().agents.map((a: { name: string }) => a.name));
      cursor = res.json().nextCursor;
    } while (cursor !== null);
    expect(names).toEqual([['alpha', 'bravo'], ['charlie', 'delta'], ['echo']]);
    // A page that ends exactly at the last one says so.
    const exact = await list('/v1/tools?limit=3');
    expect(exact.json().nextCursor).toBeNull();
    const first = await list('/v1/tools?limit=2');
    expect(first.json()).toMatchObject({ nextCursor: 't2' });
  });

  it('a cursor without limit: every one after it', async () => {
    const res = await list('/v1/agents?cursor=charlie');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().agents.map((a: { name: string }) => a.name)).toEqual(['delta', 'echo']);
    expect(res.json().nextCursor).toBeNull();
  });

  it("another tenant's configs never appear, in a list or a page", async () => {
    const page = await list('/v1/agents?limit=10&cursor=bravo');
    expect(page.json().agents.map((a: { name: string }) => a.name)).toEqual(['charlie', 'delta', 'echo']);
    const theirList = await list('/v1/agents', theirs);
    expect(theirList.json().agents.map((a: { name: string }) => a.name)).toEqual(['bz_other']);
    expect((await list('/v1/tools', theirs)).json().tools).toEqual([]);
  });

  it('a bad page size or cursor is a 400 naming the parameter', async () => {
    for (const query of [
      'limit=0',
      'limit=1001',
      'limit=two',
      'limit=2&cursor=not%20a%20name',
      `cursor=${'x'.repeat(65)}`,
    ]) {
      const res = await list(`/v1/agents?${query}`);
      const problem = expectProblem(res, 400, 'validation_error');
      expect(JSON.stringify(problem), query).toMatch(/limit|cursor/);
    }
  });
});

describe('a list bounded in bytes', () => {
  it('ends at about 16 MiB of configs with nextCursor, and the cursor gives the rest', async () => {
    const t = await createTenant(stack.app, 'pages-big');
    // 300 tools of about 60 KiB (18 MB): more than one answer holds.
    const tool = ToolConfig.parse({
      ...TOOL,
      kind: 'client',
      description: 'd'.repeat(9_000),
      inputSchema: { type: 'object', description: 'x'.repeat(51_000) },
    });
    const names = Array.from({ length: 300 }, (_, i) => `big${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 50)
      await Promise.all(names.slice(i, i + 50).map((n) => putTool(stack.db, t.tenant.id, n, tool, null)));
    const auth = { authorization: `Bearer ${t.apiKey}` };
    const list = async (query: string) => {
      const res = await stack.app.inject({ method: 'GET', url: `/v1/tools${query}`, headers: auth });
      expect(res.statusCode).toBe(200);
      expect(res.body.length).toBeLessThan(17 * 1024 * 1024);
      return res.json() as { tools: { name: string }[]; nextCursor: string | null };
    };
    const first = await list('');
    expect(first.tools.length).toBeGreaterThan(200);
    expect(first.tools.length).toBeLessThan(300);
    expect(first.nextCursor).toBe(first.tools.at(-1)!.name);
    const rest = await list(`?cursor=${first.nextCursor}`);
    expect(rest.nextCursor).toBeNull();
    expect([...first.tools, ...rest.tools].map((x) => x.name)).toEqual(names);
    // A limit within the bytes is kept as asked.
    const ten = await list('?limit=10');
    expect(ten.tools).toHaveLength(10);
    expect(ten.nextCursor).toBe('big009');
  });
});
