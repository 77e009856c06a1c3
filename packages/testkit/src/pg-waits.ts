// A PostgreSQL state tests wait for: how many backends of the test's own database are blocked on
// a lock. A test that proves a statement waits for a row or advisory lock polls this with
// `until()` (the statement is parked) instead of sleeping and hoping it got there.

import type { Db } from '@loopline/db';
import { sql } from 'kysely';

/** Backends of the current database waiting for a lock (pg_stat_activity wait_event_type 'Lock'). */
export async function lockWaiters(db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
  return rows[0]?.n ?? 0;
}
