import { AgentConfig, MAX_AGENTS_PER_TENANT, MAX_TOOLS_PER_TENANT, ToolConfig } from '@loopline/core';
import { putAgent, putTool } from '@loopline/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, expectProblem, rowCounts, type Stack, startStack } from './helpers.ts';

// A tenant defines at most MAX_AGENTS_PER_TENANT agents and MAX_TOOLS_PER_TENANT tools: their lists
// return every one, whole. Past the cap a new name is a 409 that writes nothing; an update of an
// existing name, and a new name after a delete, still work. Another tenant is not affected.

let stack: Stack;
let tenant: Awaited<ReturnType<typeof createTenant>>;
let auth: { authorization: string };

beforeAll(async () => {
  stack = await startStack('tenant_caps');
  tenant = await createTenant(stack.app, 'full');
  auth = { authorization: `Bearer ${tenant.apiKey}` };
});
afterAll(async () => {
  await stack?.close();
});

const put = (a: { authorization: string }, kind: 'agents' | 'tools', name: string, payload: object) =>
  stack.app.inject({ method: 'PUT', url: `/v1/${kind}/${name}`, headers: a, payload });
const agent = { model: 'compatible/mock' };
const tool = { kind: 'client', inputSchema: { type: 'object' } };

/** Defines `count` more agents or tools named <kind>-<n> through the data layer (no HTTP: fast). */
async function fill(kind: 'agents' | 'tools', count: number) {
  const names = Array.from({ length: count }, (_, i) => `${kind}-${i + 1}`);
  for (let i = 0; i < names.length; i += 50)
    await Promise.all(
      names
        .slice(i, i + 50)
        .map((n) =>
          kind === 'agents'
            ? putAgent(stack.db, tenant.tenant.id, n, AgentConfig.parse(agent))
            : putTool(stack.db, tenant.tenant.id, n, ToolConfig.parse(tool), null),
        ),
    );
}

describe('per-tenant caps', () => {
  for (const [kind, max, config] of [
    ['agents', MAX_AGENTS_PER_TENANT, agent],
    ['tools', MAX_TOOLS_PER_TENANT, tool],
  ] as const) {
    it(`${kind}: at most ${max}; an update or a new name after a delete still works`, async () => {
      await fill(kind, max - 1);
      expect((await put(auth, kind, 'last', config)).statusCode).toBe(201);
      const before = await rowCounts(stack.db);
      const refused = expectProblem(await put(auth, kind, 'one-more', config), 409, 'conflict');
      expect(refused.message).toBe(`A tenant has at most ${max} ${kind}: delete one first`);
      expect(await rowCounts(stack.db)).toEqual(before);
      // An existing name is an update, not a new definition.
      const update =
        kind === 'agents' ? { ...agent, system: 'changed' } : { ...tool, description: 'changed' };
      expect((await put(auth, kind, 'last', update)).statusCode).toBe(200);
      const del = await stack.app.inject({ method: 'DELETE', url: `/v1/${kind}/${kind}-1`, headers: auth });
      expect(del.statusCode, del.body).toBe(200);
      expect((await put(auth, kind, 'one-more', config)).statusCode).toBe(201);
      // Another tenant's count is its own.
      const other = await createTenant(stack.app, `other-${kind}`);
      const status = (await put({ authorization: `Bearer ${other.apiKey}` }, kind, 'first', config))
        .statusCode;
      expect(status).toBe(201);
    });
  }
});
