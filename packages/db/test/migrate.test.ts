import { readdirSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testkit/src/index.ts';
import { closeDb, createDb, MIGRATIONS_DIR, migrateToLatest } from '../src/index.ts';

// Migrations: idempotent, and safe when several processes migrate the same database at once.

const databases: TestDatabase[] = [];
/** Every migration file, in the order they run (0001_init, 0002_batches, …). */
const MIGRATIONS = readdirSync(MIGRATIONS_DIR)
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.replace(/\.ts$/, ''))
  .sort();
afterAll(async () => {
  for (const d of databases) await d.drop();
});

async function emptyDatabase(label: string): Promise<TestDatabase> {
  const database = await createTestDatabase(label, { migrated: false });
  databases.push(database);
  return database;
}

async function tables(database: TestDatabase): Promise<string[]> {
  const { rows } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = 'public' order by table_name`.execute(
    database.db,
  );
  return rows.map((r) => r.table_name);
}

describe('migrateToLatest', () => {
  it('creates the schema once; a second run is a no-op', async () => {
    const database = await emptyDatabase('migrate-twice');
    const first = await migrateToLatest(database.db);
    expect(MIGRATIONS[0]).toBe('0001_init');
    expect(first.map((r) => [r.migrationName, r.status])).toEqual(MIGRATIONS.map((m) => [m, 'Success']));
    const second = await migrateToLatest(database.db);
    expect(second).toEqual([]);
    expect(await tables(database)).toEqual(
      expect.arrayContaining(['sessions', 'messages', 'parts', 'steps', 'compactions', 'tool_outputs']),
    );
  });

  it('is safe when several processes run it at the same time', async () => {
    const database = await emptyDatabase('migrate-concurrent');
    // Separate pools stand in for separate processes.
    const pools = Array.from({ length: 5 }, () => createDb(database.url, { max: 2 }));
    try {
      const results = await Promise.all(pools.map((db) => migrateToLatest(db)));
      expect(results.flat().filter((r) => r.status === 'Success')).toHaveLength(MIGRATIONS.length);
      expect(results.flat().filter((r) => r.status !== 'Success')).toEqual([]);
    } finally {
      await Promise.all(pools.map(closeDb));
    }
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from kysely_migration`.execute(
      database.db,
    );
    expect(rows[0]?.n).toBe(MIGRATIONS.length);
  });

  it('works on a pool of one connection', async () => {
    const database = await emptyDatabase('migrate-single');
    const db = createDb(database.url, { max: 1 });
    try {
      await migrateToLatest(db);
      await migrateToLatest(db);
    } finally {
      await closeDb(db);
    }
    expect(await tables(database)).toContain('messages');
  });
});
