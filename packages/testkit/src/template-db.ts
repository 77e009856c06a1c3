import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { closeDb, createDb, type Db, MIGRATIONS_DIR, migrateToLatest } from '@loopline/db';
import { sql } from 'kysely';

// A fresh PostgreSQL database per test file, cloned from a migrated template. The template is
// named after a hash of the migrations, so editing a migration builds a new one; it is built
// once, under an advisory lock, by whichever process gets there first.

export interface TestDatabase {
  /** Connection string of the new database. */
  url: string;
  name: string;
  db: Db;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
/** Arbitrary constant key of the advisory lock ("loopline template"). */
const TEMPLATE_LOCK_KEY = 7_406_110_002;

/** The URL of the server's `postgres` database, for creating test databases. */
export function adminUrl(): string {
  if (process.env.DATABASE_ADMIN_URL) return process.env.DATABASE_ADMIN_URL;
  // The same server as DATABASE_URL (the one scripts/test.sh made sure is running), database postgres.
  if (process.env.DATABASE_URL) {
    const url = new URL(process.env.DATABASE_URL);
    url.pathname = '/postgres';
    return url.toString();
  }
  return DEFAULT_ADMIN_URL;
}

/** The URL of another database on the same server. */
export function databaseUrl(name: string, base: string = adminUrl()): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Hash of the migration files' names and contents. */
export async function migrationsHash(dir: string = MIGRATIONS_DIR): Promise<string> {
  const hash = createHash('sha256');
  for (const file of (await readdir(dir)).sort()) {
    hash
      .update(file)
      .update('\0')
      .update(await readFile(path.join(dir, file)))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

let template: Promise<string> | undefined;

/** Name of the migrated template database, building it if missing (once per process). */
export function ensureTemplate(): Promise<string> {
  template ??= buildTemplate().catch((error: unknown) => {
    template = undefined;
    throw error;
  });
  return template;
}

async function buildTemplate(): Promise<string> {
  const name = `loopline_tpl_${await migrationsHash()}`;
  const admin = createDb(adminUrl(), { max: 1 });
  try {
    await admin.connection().execute(async (conn) => {
      await sql`select pg_advisory_lock(${TEMPLATE_LOCK_KEY}::bigint)`.execute(conn);
      try {
        if (await databaseExists(conn, name)) return;
        // Build under another name and rename at the end: a crash mid-build leaves no half template.
        const building = `${name}_build`;
        await sql`drop database if exists ${sql.id(building)} with (force)`.execute(conn);
        await sql`create database ${sql.id(building)}`.execute(conn);
        const db = createDb(databaseUrl(building), { max: 1 });
        try {
          await migrateToLatest(db);
        } finally {
          await closeDb(db);
        }
        await sql`alter database ${sql.id(building)} rename to ${sql.id(name)}`.execute(conn);
        await sql`alter database ${sql.id(name)} with is_template true`.execute(conn);
      } finally {
        await sql`select pg_advisory_unlock(${TEMPLATE_LOCK_KEY}::bigint)`.execute(conn);
      }
    });
  } finally {
    await closeDb(admin);
  }
  return name;
}

async function databaseExists(db: Db, name: string): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`select 1 as n from pg_database where datname = ${name}`.execute(
    db,
  );
  return rows.length > 0;
}

export interface CreateTestDatabaseOptions {
  /** false: an empty database (for migration tests) instead of a clone of the migrated template. */
  migrated?: boolean;
}

/** A new database cloned from the template; call drop() when done (afterAll). */
export async function createTestDatabase(
  label = 'test',
  opts: CreateTestDatabaseOptions = {},
): Promise<TestDatabase> {
  const tpl = opts.migrated === false ? 'template1' : await ensureTemplate();
  const slug = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 30);
  const name = `loopline_t_${slug}_${randomBytes(4).toString('hex')}`;
  const admin = createDb(adminUrl(), { max: 1 });
  try {
    await sql`create database ${sql.id(name)} template ${sql.id(tpl)}`.execute(admin);
  } finally {
    await closeDb(admin);
  }
  const url = databaseUrl(name);
  const db = createDb(url);
  let dropped = false;
  return {
    url,
    name,
    db,
    async drop() {
      if (dropped) return;
      dropped = true;
      await closeDb(db);
      const admin = createDb(adminUrl(), { max: 1 });
      try {
        await sql`drop database if exists ${sql.id(name)} with (force)`.execute(admin);
      } finally {
        await closeDb(admin);
      }
    },
  };
}
