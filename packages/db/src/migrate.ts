import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { FileMigrationProvider, type MigrationResult, Migrator } from 'kysely/migration';
import type { Db } from './client.ts';
import { type RetryOptions, retryOnConnectionError } from './connection-errors.ts';

// Runs the numbered migrations in ./migrations. Safe when several processes start at once: the
// whole run holds a session-level advisory lock on one pinned connection (kysely's own lock
// does not cover creating its bookkeeping tables), and the migrator runs on that connection.

/** The folder of migration files; testkit hashes it to name its template database. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations', import.meta.url));

/** Arbitrary constant key of the advisory lock ("loopline migrate"). */
const MIGRATION_LOCK_KEY = 7_406_110_001;

/** Applies pending migrations; returns what ran (empty when the schema was current). */
export async function migrateToLatest(db: Db): Promise<MigrationResult[]> {
  return db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY}::bigint)`.execute(conn);
    try {
      const migrator = new Migrator({
        db: conn,
        provider: new FileMigrationProvider({ fs, path, migrationFolder: MIGRATIONS_DIR }),
      });
      const { error, results } = await migrator.migrateToLatest();
      if (error) throw error;
      return results ?? [];
    } finally {
      // A session-level lock dies with its connection: when the connection is gone (the error in
      // flight is about that), the unlock fails too and must not replace the original error.
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY}::bigint)`
        .execute(conn)
        .catch(() => undefined);
    }
  });
}

/**
 * migrateToLatest for a process that is starting: waits for PostgreSQL (not up yet, restarting,
 * its connection terminated mid-migration) instead of exiting. Kysely runs the pending migrations
 * in one transaction on PostgreSQL, so an interrupted run left nothing behind and a retry redoes it.
 */
export function migrateWhenReady(db: Db, opts: RetryOptions = {}): Promise<MigrationResult[]> {
  return retryOnConnectionError(() => migrateToLatest(db), opts);
}
