import { MAX_TOOLS_PER_TENANT, type ToolConfig } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';
import type { ToolInfo } from './mappers.ts';
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

// Tools: named, versioned tool definitions of a tenant, webhook or client tools (named-configs.ts
// does the storage). The sealed webhook signing secret is set once, when the tool has none yet,
// and kept by later puts; ToolInfo never carries it.

const TOOLS: NamedConfigKind = { table: 'tools', secret: 'signing_secret', onPut: 'keep' };

/** Whether a put of tool `name` keeps the tenant within MAX_TOOLS_PER_TENANT (an update always does). */
export function toolWithinCap(db: Db, tenantId: string, name: string): Promise<boolean> {
  return withinNamedConfigCap(db, TOOLS, tenantId, name, MAX_TOOLS_PER_TENANT);
}

/** Creates or updates the tool; `signingSecret` (sealed) is stored only if the tool has none yet. */
export async function putTool(
  db: Db,
  tenantId: string,
  name: string,
  config: ToolConfig,
  signingSecret: string | null = null,
): Promise<{ tool: ToolInfo; created: boolean; secretStored: boolean }> {
  const { item, created, secretStored } = await putNamedConfig(
    db,
    TOOLS,
    tenantId,
    name,
    config,
    signingSecret,
  );
  return { tool: item, created, secretStored };
}

/** The sealed signing secret of a tool (undefined: no such tool; null: none stored). */
export function getToolSigningSecret(
  db: Db,
  tenantId: string,
  name: string,
): Promise<string | null | undefined> {
  return getNamedSecret(db, TOOLS, tenantId, name);
}

/** The tenant's tool of that name, without its signing secret. */
export function getTool(db: Db, tenantId: string, name: string): Promise<ToolInfo | undefined> {
  return getNamedConfig<ToolConfig>(db, TOOLS, tenantId, name);
}

/** The tenant's tools, without their signing secrets. */
export function listTools(db: Db, tenantId: string, page?: NamedConfigPage): Promise<ToolInfo[]> {
  return listNamedConfigs<ToolConfig>(db, TOOLS, tenantId, undefined, page);
}

/** The named tools that exist (unknown names are simply absent), ordered by name. */
export function getToolsByName(db: Db, tenantId: string, names: readonly string[]): Promise<ToolInfo[]> {
  return listNamedConfigs<ToolConfig>(db, TOOLS, tenantId, names);
}

/** Deletes a tool definition; false when there was none. */
export function deleteTool(db: Db, tenantId: string, name: string): Promise<boolean> {
  return deleteNamedConfig(db, TOOLS, tenantId, name);
}

/** Agents of the tenant whose configuration names the tool. */
export async function agentsUsingTool(db: Db, tenantId: string, tool: string): Promise<string[]> {
  const rows = await db
    .selectFrom('agents')
    .select('name')
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`config -> 'tools' @> ${JSON.stringify([tool])}::jsonb`)
    .orderBy('name')
    .execute();
  return rows.map((r) => r.name);
}
