import type { AgentConfig } from '@loopline/core';
import { sql } from 'kysely';
import type { Db } from '../client.ts';
import { toJson } from '../tables/columns.ts';
import { type AgentInfo, toAgent } from './mappers.ts';

// Agents: named, versioned configurations of a tenant. The caller validates the config with
// core's AgentConfig; a put with an unchanged config and credential is a no-op (the version
// stays). The sealed credential lives in its own column: AgentInfo (what GET returns) never
// carries it.

export async function putAgent(
  db: Db,
  tenantId: string,
  name: string,
  config: AgentConfig,
  /** The sealed model credential for config.baseURL (null: none). */
  credential: string | null = null,
): Promise<{ agent: AgentInfo; created: boolean }> {
  const row = await db
    .insertInto('agents')
    .values({ tenant_id: tenantId, name, config: toJson(config), credential })
    .onConflict((oc) =>
      oc
        .columns(['tenant_id', 'name'])
        .doUpdateSet((eb) => ({
          config: eb.ref('excluded.config'),
          credential: eb.ref('excluded.credential'),
          version: eb('agents.version', '+', 1),
          updated_at: sql<Date>`now()`,
        }))
        .where((eb) =>
          eb.or([
            eb('agents.config', 'is distinct from', eb.ref('excluded.config')),
            eb('agents.credential', 'is distinct from', eb.ref('excluded.credential')),
          ]),
        ),
    )
    .returningAll()
    .executeTakeFirst();
  if (row) return { agent: toAgent(row), created: row.version === 1 };
  const existing = await getAgent(db, tenantId, name);
  if (!existing) throw new Error(`agent ${name} vanished during put`);
  return { agent: existing, created: false };
}

export async function getAgent(db: Db, tenantId: string, name: string): Promise<AgentInfo | undefined> {
  const row = await db
    .selectFrom('agents')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .executeTakeFirst();
  return row ? toAgent(row) : undefined;
}

export async function listAgents(db: Db, tenantId: string): Promise<AgentInfo[]> {
  const rows = await db
    .selectFrom('agents')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .orderBy('name')
    .execute();
  return rows.map(toAgent);
}

/** The sealed model credential of an agent (undefined: no such agent; null: none stored). */
export async function getAgentCredential(
  db: Db,
  tenantId: string,
  name: string,
): Promise<string | null | undefined> {
  const row = await db
    .selectFrom('agents')
    .select('credential')
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .executeTakeFirst();
  return row ? row.credential : undefined;
}
