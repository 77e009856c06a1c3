import { AgentConfig, ToolConfig } from '@loopline/core';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeTenant } from '../../testkit/src/index.ts';
import {
  agentsUsingTool,
  deleteAgent,
  deleteTool,
  getAgent,
  getAgentCredential,
  getTool,
  getToolSigningSecret,
  getToolsByName,
  listAgents,
  listTools,
  putAgent,
  putTool,
} from '../src/index.ts';

// The one store of agents and tools (repo/named-configs.ts): versions, no-op puts, the two secret
// policies (an agent's credential is replaced, a tool's signing secret is kept), list and delete.

const agent = (tools: string[] = []) => AgentConfig.parse({ model: 'openai/gpt-4o-mini', tools });
const tool = (url: string) =>
  ToolConfig.parse({ kind: 'webhook', description: 'd', url, inputSchema: { type: 'object' } });

describe('named configs', () => {
  test('a put creates (version 1), an unchanged put is a no-op, a change bumps the version', async ({
    pg,
  }) => {
    const { tenant } = await makeTenant(pg.db, 'acme');
    const first = await putAgent(pg.db, tenant.id, 'a', agent());
    expect(first).toMatchObject({ created: true, agent: { name: 'a', version: 1 } });
    const same = await putAgent(pg.db, tenant.id, 'a', agent());
    expect(same).toMatchObject({ created: false, agent: { version: 1 } });
    const changed = await putAgent(pg.db, tenant.id, 'a', { ...agent(), system: 'be brief' });
    expect(changed).toMatchObject({ created: false, agent: { version: 2, config: { system: 'be brief' } } });
    expect((await getAgent(pg.db, tenant.id, 'a'))?.version).toBe(2);
    expect(changed.agent.updatedAt.getTime()).toBeGreaterThanOrEqual(first.agent.createdAt.getTime());
  });

  test("an agent's credential is replaced by each put (a new one is a change; null clears it)", async ({
    pg,
  }) => {
    const { tenant } = await makeTenant(pg.db, 'acme');
    await putAgent(pg.db, tenant.id, 'a', agent(), 'sealed-1');
    expect(await getAgentCredential(pg.db, tenant.id, 'a')).toBe('sealed-1');
    const replaced = await putAgent(pg.db, tenant.id, 'a', agent(), 'sealed-2');
    expect(replaced.agent.version).toBe(2);
    expect(await getAgentCredential(pg.db, tenant.id, 'a')).toBe('sealed-2');
    await putAgent(pg.db, tenant.id, 'a', agent(), null);
    expect(await getAgentCredential(pg.db, tenant.id, 'a')).toBeNull();
    expect(await getAgentCredential(pg.db, tenant.id, 'nope')).toBeUndefined();
    expect(JSON.stringify(await getAgent(pg.db, tenant.id, 'a'))).not.toContain('sealed');
  });

  test("a tool's signing secret is stored once and kept by later puts", async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db, 'acme');
    const plain = await putTool(pg.db, tenant.id, 't', tool('https://example.com/a'));
    expect(plain).toMatchObject({ created: true, secretStored: false });
    const signed = await putTool(pg.db, tenant.id, 't', tool('https://example.com/a'), 'sealed-1');
    expect(signed).toMatchObject({ created: false, secretStored: true, tool: { version: 2 } });
    const again = await putTool(pg.db, tenant.id, 't', tool('https://example.com/b'), 'sealed-2');
    expect(again).toMatchObject({ secretStored: false, tool: { version: 3 } });
    expect(await getToolSigningSecret(pg.db, tenant.id, 't')).toBe('sealed-1');
    const unchanged = await putTool(pg.db, tenant.id, 't', tool('https://example.com/b'), 'sealed-3');
    expect(unchanged).toMatchObject({ secretStored: false, tool: { version: 3 } });
    expect(await getToolSigningSecret(pg.db, tenant.id, 't')).toBe('sealed-1');
  });

  test('list by name, by tenant, and delete', async ({ pg }) => {
    const { tenant } = await makeTenant(pg.db, 'acme');
    const { tenant: other } = await makeTenant(pg.db, 'other');
    for (const name of ['b', 'a', 'c'])
      await putTool(pg.db, tenant.id, name, tool(`https://example.com/${name}`));
    await putTool(pg.db, other.id, 'a', tool('https://example.com/x'));
    expect((await listTools(pg.db, tenant.id)).map((t) => t.name)).toEqual(['a', 'b', 'c']);
    expect((await getToolsByName(pg.db, tenant.id, ['c', 'zz', 'a'])).map((t) => t.name)).toEqual(['a', 'c']);
    expect(await getToolsByName(pg.db, tenant.id, [])).toEqual([]);
    await putAgent(pg.db, tenant.id, 'uses-b', agent(['b']));
    expect(await agentsUsingTool(pg.db, tenant.id, 'b')).toEqual(['uses-b']);
    expect((await listAgents(pg.db, tenant.id)).map((a) => a.name)).toEqual(['uses-b']);
    expect(await deleteTool(pg.db, tenant.id, 'a')).toBe(true);
    expect(await deleteTool(pg.db, tenant.id, 'a')).toBe(false);
    expect(await getTool(pg.db, tenant.id, 'a')).toBeUndefined();
    expect(await getTool(pg.db, other.id, 'a')).toBeDefined();
    expect(await deleteAgent(pg.db, tenant.id, 'uses-b')).toBe(true);
    expect(await deleteAgent(pg.db, tenant.id, 'uses-b')).toBe(false);
  });
});
