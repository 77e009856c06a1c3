import { type AgentConfig, MAX_AGENTS_PER_TENANT, SUBAGENT_MODES } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';
import type { AgentInfo } from './mappers.ts';
import {
  deleteNamedConfig,
  getNamedConfig,
  getNamedSecret,
  listNamedConfigs,
  type NamedConfigKind,
  type NamedConfigPage,
  putNamedConfig,
  withinNamedConfigCap,
} from './named-configs.ts';

// Agents: named, versioned configurations of a tenant (named-configs.ts does the storage). The
// sealed model credential is replaced by every put (a changed one is a change, null clears it);
// AgentInfo (what GET returns) never carries it.

const AGENTS: NamedConfigKind = { table: 'agents', secret: 'credential', onPut: 'replace' };

/** Creates or updates the agent; `credential` is the sealed model key for config.baseURL (null: none). */
export async function putAgent(
  db: Db,
  tenantId: string,
  name: string,
  config: AgentConfig,
  credential: string | null = null,
): Promise<{ agent: AgentInfo; created: boolean }> {
  const { item, created } = await putNamedConfig(db, AGENTS, tenantId, name, config, credential);
  return { agent: item, created };
}

/** Whether a put of agent `name` keeps the tenant within MAX_AGENTS_PER_TENANT (an update always does). */
export function agentWithinCap(db: Db, tenantId: string, name: string): Promise<boolean> {
  return withinNamedConfigCap(db, AGENTS, tenantId, name, MAX_AGENTS_PER_TENANT);
}

/** The tenant's agent of that name, without its credential. */
export function getAgent(db: Db, tenantId: string, name: string): Promise<AgentInfo | undefined> {
  return getNamedConfig<AgentConfig>(db, AGENTS, tenantId, name);
}

/** The tenant's agents, without their credentials. */
export function listAgents(db: Db, tenantId: string, page?: NamedConfigPage): Promise<AgentInfo[]> {
  return listNamedConfigs<AgentConfig>(db, AGENTS, tenantId, undefined, page);
}

/**
 * The names of the tenant's agents that may run as subagents (mode `subagent` or `all`), sorted:
 * what the task tool lists, read without the configs (a tenant's agents may be many and large).
 */
export async function listSubagentNames(db: Db, tenantId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('agents')
    .select('name')
    .where('tenant_id', '=', tenantId)
    .where(sql<string>`config->>'mode'`, 'in', [...SUBAGENT_MODES])
    .orderBy('name')
    .execute();
  return rows.map((r) => r.name);
}

/** The sealed model credential of an agent (undefined: no such agent; null: none stored). */
export function getAgentCredential(
  db: Db,
  tenantId: string,
  name: string,
): Promise<string | null | undefined> {
  return getNamedSecret(db, AGENTS, tenantId, name);
}

/** Deletes an agent definition; false when there was none. Sessions keep their own copy of its config. */
export function deleteAgent(db: Db, tenantId: string, name: string): Promise<boolean> {
  return deleteNamedConfig(db, AGENTS, tenantId, name);
}
