// Creates the database of DATABASE_URL before the services migrate it (the demo, or by hand).

import { databaseEnv, parseEnv } from '@loopline/core';
import pg from 'pg';

/** Creates the database named in `url` when it does not exist (connecting to `postgres`). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`create database "${name.replaceAll('"', '""')}"`);
  } catch (err) {
    if ((err as { code?: string }).code !== '42P04') throw err; // created concurrently
  } finally {
    await client.end();
  }
}

// Standalone: `node apps/cli/src/ensure-database.ts` creates $DATABASE_URL's database (the
// gateway and worker migrate it but expect it to exist).
if (import.meta.main) {
  // The same DATABASE_URL schema (default and checks) as the gateway and worker.
  const env = parseEnv(databaseEnv.pick({ DATABASE_URL: true }), process.env, 'ensure-database');
  await ensureDatabase(env.DATABASE_URL);
}
