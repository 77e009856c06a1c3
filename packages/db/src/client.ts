import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import { DEFAULT_PREPARED_PER_CONNECTION, prepareRepeatedStatements } from './prepared.ts';
import type { DB } from './schema.ts';

// The connection pool. Owns type parsing (int8 → number, jsonb → object, timestamptz → Date);
// holds no module state: every caller gets its own pool and closes it with closeDb.

export type Db = Kysely<DB>;
export type Trx = Transaction<DB>;

export interface CreateDbOptions {
  /** Pool size (default 10). */
  max?: number;
  /** Shown in pg_stat_activity; helps to tell gateway from worker connections. */
  applicationName?: string;
  /**
   * Errors of idle pooled connections (PostgreSQL restarted, network cut). Without a listener
   * node-postgres would crash the process; the next query fails instead and is retried by its job.
   */
  onError?: (error: Error) => void;
  /**
   * Named prepared statements per connection for the statements it repeats (prepared.ts; default
   * 100, 0 = off, as for a transaction-pooling proxy that does not track them).
   */
  preparedStatements?: number;
}

const INT8_OID = 20;
// seq, fence and counters are int8; every value Loopline stores fits in a JS number.
const parseInt8 = (value: string): number => Number(value);

const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? parseInt8
      : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
};

/** Creates the Kysely database on a pg pool. */
export function createDb(url: string, opts: CreateDbOptions = {}): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    types,
    ...(opts.applicationName ? { application_name: opts.applicationName } : {}),
  });
  pool.on('error', (error) => opts.onError?.(error));
  // A client checked out inside a transaction emits 'error' when its backend is terminated
  // (pg_terminate_backend, a PostgreSQL restart); unhandled, that would crash the process. The
  // statement in flight fails on its own (the job retries) and the pool drops the dead client.
  pool.on('connect', (client) => {
    client.on('error', (error) => opts.onError?.(error));
    prepareRepeatedStatements(client, opts.preparedStatements ?? DEFAULT_PREPARED_PER_CONNECTION);
  });
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
}

/** Closes the database and its pool. */
export async function closeDb(db: Db): Promise<void> {
  await db.destroy();
}
