import { sql } from 'kysely';
import type { Db } from '../client.ts';
import { toJson } from '../tables/columns.ts';

// Named configurations of a tenant, for agents and tools (two tables of one shape): (tenant, name)
// → a validated config, a version bumped by every real change, and a sealed secret no config read
// returns. agents.ts and tools.ts name their table and how their secret behaves on a put.

export interface NamedConfig<C> {
  name: string;
  config: C;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface NamedConfigKind {
  table: 'agents' | 'tools';
  /** The column of the sealed secret. */
  secret: 'credential' | 'signing_secret';
  /**
   * `replace`: a put stores the secret it brings (null clears it), and a new secret is a change
   * (an agent's model credential). `keep`: a stored secret stays; a put's secret is stored only
   * where none is yet (a webhook tool's signing secret, shown once).
   */
  onPut: 'replace' | 'keep';
}

interface Row {
  name: string;
  config: unknown;
  version: number;
  created_at: Date;
  updated_at: Date;
  secret: string | null;
}

const columns = (kind: NamedConfigKind) =>
  sql`name, config, version, created_at, updated_at, ${sql.ref(kind.secret)} as secret`;

function toNamed<C>(row: Row): NamedConfig<C> {
  return {
    name: row.name,
    config: row.config as C,
    version: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export interface PutNamedResult<C> {
  item: NamedConfig<C>;
  created: boolean;
  /** The put's secret is the one stored now (false with `keep` when one was there first). */
  secretStored: boolean;
}

/** Creates or updates (version + 1) the named config; unchanged config and secret: a no-op. */
export async function putNamedConfig<C>(
  db: Db,
  kind: NamedConfigKind,
  tenantId: string,
  name: string,
  config: C,
  secret: string | null,
): Promise<PutNamedResult<C>> {
  const t = sql.table(kind.table);
  const s = sql.ref(kind.secret);
  const old = sql.ref(`${kind.table}.${kind.secret}`);
  const secretSet = kind.onPut === 'replace' ? sql`excluded.${s}` : sql`coalesce(${old}, excluded.${s})`;
  const secretChanged =
    kind.onPut === 'replace'
      ? sql`${old} is distinct from excluded.${s}`
      : sql`(${old} is null and excluded.${s} is not null)`;
  const { rows } = await sql<Row>`
    insert into ${t} (tenant_id, name, config, ${s})
    values (${tenantId}, ${name}, ${toJson(config)}::jsonb, ${secret})
    on conflict (tenant_id, name) do update set
      config = excluded.config,
      ${s} = ${secretSet},
      version = ${sql.ref(`${kind.table}.version`)} + 1,
      updated_at = now()
    where ${sql.ref(`${kind.table}.config`)} is distinct from excluded.config or ${secretChanged}
    returning ${columns(kind)}`.execute(db);
  const row = rows[0];
  if (row)
    return {
      item: toNamed<C>(row),
      created: row.version === 1,
      // Ours unless a concurrent put stored another first.
      secretStored: secret !== null && row.secret === secret,
    };
  const existing = await getNamedConfig<C>(db, kind, tenantId, name);
  if (!existing) throw new Error(`${kind.table}: ${name} vanished during put`);
  return { item: existing, created: false, secretStored: false };
}

/**
 * Whether a put of `name` keeps the tenant within `max` configs of this kind: an existing name
 * always does (an update). A check before the put, as for webhook subscriptions: two concurrent
 * creations may pass it together, so the cap holds within the number of concurrent requests.
 */
export async function withinNamedConfigCap(
  db: Db,
  kind: NamedConfigKind,
  tenantId: string,
  name: string,
  max: number,
): Promise<boolean> {
  const t = sql.table(kind.table);
  const { rows } = await sql<{ ok: boolean }>`
    select exists (select 1 from ${t} where tenant_id = ${tenantId} and name = ${name})
      or (select count(*) from ${t} where tenant_id = ${tenantId}) < ${max} as ok`.execute(db);
  return rows[0]?.ok === true;
}

/** The tenant's named config of that name (never its secret), or undefined. */
export async function getNamedConfig<C>(
  db: Db,
  kind: NamedConfigKind,
  tenantId: string,
  name: string,
): Promise<NamedConfig<C> | undefined> {
  const { rows } = await sql<Row>`
    select ${columns(kind)} from ${sql.table(kind.table)}
    where tenant_id = ${tenantId} and name = ${name}`.execute(db);
  return rows[0] ? toNamed<C>(rows[0]) : undefined;
}

/** A page of a tenant's named configs by name: the names after `after`, at most `limit` of them. */
export interface NamedConfigPage {
  limit?: number;
  after?: string;
}

/**
 * The tenant's named configs, by name; with `names`, only those (unknown names are absent); with
 * `page`, those after page.after, at most page.limit of them.
 */
export async function listNamedConfigs<C>(
  db: Db,
  kind: NamedConfigKind,
  tenantId: string,
  names?: readonly string[],
  page?: NamedConfigPage,
): Promise<NamedConfig<C>[]> {
  if (names?.length === 0) return [];
  const only = names ? sql`and name = any(${[...names]}::text[])` : sql``;
  const after = page?.after !== undefined ? sql`and name > ${page.after}` : sql``;
  const limit = page?.limit !== undefined ? sql`limit ${page.limit}` : sql``;
  const { rows } = await sql<Row>`
    select ${columns(kind)} from ${sql.table(kind.table)}
    where tenant_id = ${tenantId} ${only} ${after} order by name ${limit}`.execute(db);
  return rows.map((r) => toNamed<C>(r));
}

/** The sealed secret (undefined: no such name; null: none stored). */
export async function getNamedSecret(
  db: Db,
  kind: NamedConfigKind,
  tenantId: string,
  name: string,
): Promise<string | null | undefined> {
  const { rows } = await sql<{ secret: string | null }>`
    select ${sql.ref(kind.secret)} as secret from ${sql.table(kind.table)}
    where tenant_id = ${tenantId} and name = ${name}`.execute(db);
  return rows[0] ? rows[0].secret : undefined;
}

/** Deletes the named config; false when there was none. */
export async function deleteNamedConfig(
  db: Db,
  kind: NamedConfigKind,
  tenantId: string,
  name: string,
): Promise<boolean> {
  const r =
    await sql`delete from ${sql.table(kind.table)} where tenant_id = ${tenantId} and name = ${name}`.execute(
      db,
    );
  return (r.numAffectedRows ?? 0n) > 0n;
}
