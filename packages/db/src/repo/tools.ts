import type { ToolConfig } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';
import { toJson } from '../tables/columns.ts';
import { type ToolInfo, toTool } from './mappers.ts';

// Tools: named, versioned tool definitions of a tenant (webhook or client tools). The caller
// validates the config with core's ToolConfig; a put with an unchanged config is a no-op.

export async function putTool(
  db: Db,
  tenantId: string,
  name: string,
  config: ToolConfig,
): Promise<{ tool: ToolInfo; created: boolean }> {
  const row = await db
    .insertInto('tools')
    .values({ tenant_id: tenantId, name, config: toJson(config) })
    .onConflict((oc) =>
      oc
        .columns(['tenant_id', 'name'])
        .doUpdateSet((eb) => ({
          config: eb.ref('excluded.config'),
          version: eb('tools.version', '+', 1),
          updated_at: sql<Date>`now()`,
        }))
        .whereRef('tools.config', 'is distinct from', 'excluded.config'),
    )
    .returningAll()
    .executeTakeFirst();
  if (row) return { tool: toTool(row), created: row.version === 1 };
  const existing = await getTool(db, tenantId, name);
  if (!existing) throw new Error(`tool ${name} vanished during put`);
  return { tool: existing, created: false };
}

export async function getTool(db: Db, tenantId: string, name: string): Promise<ToolInfo | undefined> {
  const row = await db
    .selectFrom('tools')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .executeTakeFirst();
  return row ? toTool(row) : undefined;
}

export async function listTools(db: Db, tenantId: string): Promise<ToolInfo[]> {
  const rows = await db
    .selectFrom('tools')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .orderBy('name')
    .execute();
  return rows.map(toTool);
}

/** The named tools that exist (unknown names are simply absent), ordered by name. */
export async function getToolsByName(
  db: Db,
  tenantId: string,
  names: readonly string[],
): Promise<ToolInfo[]> {
  if (names.length === 0) return [];
  const rows = await db
    .selectFrom('tools')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('name', 'in', [...names])
    .orderBy('name')
    .execute();
  return rows.map(toTool);
}
