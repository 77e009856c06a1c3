import type { ToolConfig } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';
import { toJson } from '../tables/columns.ts';
import { type ToolInfo, toTool } from './mappers.ts';

// Tools: named, versioned tool definitions of a tenant (webhook or client tools). The caller
// validates the config with core's ToolConfig; a put with an unchanged config is a no-op. The
// sealed webhook signing secret lives in its own column (ToolInfo never carries it): set once,
// when the tool has none yet, and kept by later puts.

export async function putTool(
  db: Db,
  tenantId: string,
  name: string,
  config: ToolConfig,
  /** A sealed signing secret for a tool that has none yet (kept if one is already stored). */
  signingSecret: string | null = null,
): Promise<{ tool: ToolInfo; created: boolean; secretStored: boolean }> {
  const row = await db
    .insertInto('tools')
    .values({ tenant_id: tenantId, name, config: toJson(config), signing_secret: signingSecret })
    .onConflict((oc) =>
      oc
        .columns(['tenant_id', 'name'])
        .doUpdateSet((eb) => ({
          config: eb.ref('excluded.config'),
          signing_secret: eb.fn.coalesce('tools.signing_secret', 'excluded.signing_secret'),
          version: eb('tools.version', '+', 1),
          updated_at: sql<Date>`now()`,
        }))
        .where((eb) =>
          eb.or([
            eb('tools.config', 'is distinct from', eb.ref('excluded.config')),
            eb.and([eb('tools.signing_secret', 'is', null), eb('excluded.signing_secret', 'is not', null)]),
          ]),
        ),
    )
    .returningAll()
    .executeTakeFirst();
  if (row)
    return {
      tool: toTool(row),
      created: row.version === 1,
      // Ours unless a concurrent put stored another first (then ours was not kept: do not show it).
      secretStored: signingSecret !== null && row.signing_secret === signingSecret,
    };
  const existing = await getTool(db, tenantId, name);
  if (!existing) throw new Error(`tool ${name} vanished during put`);
  return { tool: existing, created: false, secretStored: false };
}

/** The sealed signing secret of a tool (undefined: no such tool; null: none stored). */
export async function getToolSigningSecret(
  db: Db,
  tenantId: string,
  name: string,
): Promise<string | null | undefined> {
  const row = await db
    .selectFrom('tools')
    .select('signing_secret')
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .executeTakeFirst();
  return row ? row.signing_secret : undefined;
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
