import { readdirSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, until } from '../../testkit/src/index.ts';
import {
  closeDb,
  createDb,
  isConnectionError,
  MIGRATIONS_DIR,
  migrateToLatest,
  migrateWhenReady,
  retryOnConnectionError,
} from '../src/index.ts';

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

// A process that starts while PostgreSQL is restarting, failing over or killing connections must
// wait for it, not exit (the postgres-kill fault test saw a worker die at boot this way).
describe('migrateWhenReady', () => {
  it('retries when its connection is terminated in the middle of the migration', async () => {
    const database = await emptyDatabase('migrate-terminated');
    const db = createDb(database.url, { max: 2, applicationName: 'migrate-victim' });
    const blocker = createDb(database.url, { max: 1 });
    const retries: unknown[] = [];
    try {
      // Hold the migration lock so the run parks on pg_advisory_lock, then kill its backend.
      await blocker.connection().execute(async (conn) => {
        await sql`select pg_advisory_lock(7406110001::bigint)`.execute(conn);
        const run = migrateWhenReady(db, { delayMs: 50, onRetry: (err) => retries.push(err) });
        const killed = await until('the migration parked on the lock, then terminated', async () => {
          const { rows } = await sql<{ n: number }>`
            select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
            where application_name = 'migrate-victim' and query like '%pg_advisory_lock%'`.execute(conn);
          return rows[0]?.n || undefined;
        });
        expect(killed).toBe(1);
        await sql`select pg_advisory_unlock(7406110001::bigint)`.execute(conn);
        const results = await run;
        expect(results.map((r) => r.status)).toEqual(MIGRATIONS.map(() => 'Success'));
      });
    } finally {
      await closeDb(blocker);
      await closeDb(db);
    }
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries.every(isConnectionError)).toBe(true);
    expect(await tables(database)).toContain('messages');
  });

  it('gives up after its attempts when nothing listens, and never retries a real error', async () => {
    const db = createDb('postgres://postgres@127.0.0.1:1/none', { max: 1 });
    let retried = 0;
    try {
      await expect(
        migrateWhenReady(db, { attempts: 2, delayMs: 10, onRetry: () => retried++ }),
      ).rejects.toSatisfy(isConnectionError);
    } finally {
      await closeDb(db);
    }
    expect(retried).toBe(1);
    let calls = 0;
    const syntax = Object.assign(new Error('syntax error at or near "selec"'), { code: '42601' });
    await expect(
      retryOnConnectionError(async () => {
        calls++;
        throw syntax;
      }),
    ).rejects.toBe(syntax);
    expect(calls).toBe(1);
  });

  it('tells connection failures from statement errors', () => {
    const coded = (code: string) => Object.assign(new Error(code), { code });
    for (const code of ['ECONNRESET', 'ECONNREFUSED', '57P01', '57P03', '08006', '53300'])
      expect(isConnectionError(coded(code)), code).toBe(true);
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).toBe(true);
    // kysely, on a connection pg already dropped (CI saw it replace the real error once).
    expect(isConnectionError(new Error('Postgres connection has been discarded'))).toBe(true);
    expect(isConnectionError(new AggregateError([coded('ECONNREFUSED')]))).toBe(true);
    for (const code of ['42601', '23505', '40001']) expect(isConnectionError(coded(code)), code).toBe(false);
    expect(isConnectionError('ECONNRESET')).toBe(false);
  });
});
