import { sql } from 'kysely';
import { afterEach, describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { closeDb, createDb, type Db } from '../src/index.ts';

// Repeated statements as named prepared statements (src/prepared.ts), against a real PostgreSQL:
// what a connection has prepared is read from pg_prepared_statements on that same connection
// (pools of one).

const open: Db[] = [];
afterEach(async () => {
  for (const db of open.splice(0)) await closeDb(db);
});

function pool(url: string, preparedStatements?: number): Db {
  const db = createDb(url, { max: 1, ...(preparedStatements !== undefined ? { preparedStatements } : {}) });
  open.push(db);
  return db;
}

async function prepared(db: Db): Promise<string[]> {
  const { rows } = await sql<{ statement: string }>`
    select statement from pg_prepared_statements order by prepare_time`.execute(db);
  return rows.map((r) => r.statement);
}

/** A table of one row (a = 1), made on the test database's own pool. */
async function oneRowTable(db: Db, table: string): Promise<void> {
  await sql`create table ${sql.table(table)} (a int)`.execute(db);
  await sql`insert into ${sql.table(table)} values (1)`.execute(db);
}

const add = (db: Db, n: number) => sql<{ x: number }>`select ${n}::int8 + 1 as x`.execute(db);

describe('prepared statements', () => {
  test('a statement is prepared on its second run, and answers as before', async ({ pg }) => {
    const db = pool(pg.url);
    expect((await add(db, 1)).rows).toEqual([{ x: 2 }]);
    expect(await prepared(db)).toEqual([]);
    expect((await add(db, 2)).rows).toEqual([{ x: 3 }]); // int8 still parsed to a number
    expect(await prepared(db)).toEqual(['select $1::int8 + 1 as x']);
    expect((await add(db, 41)).rows).toEqual([{ x: 42 }]);
    expect(await prepared(db)).toHaveLength(1);
  });

  test('at most `preparedStatements` per connection; 0 prepares nothing', async ({ pg }) => {
    const capped = pool(pg.url, 2);
    for (let round = 0; round < 2; round++)
      for (const n of [1, 2, 3]) await sql`select ${n}::int + ${sql.raw(String(n))} as x`.execute(capped);
    expect(await prepared(capped)).toHaveLength(2);

    const off = pool(pg.url, 0);
    for (let i = 0; i < 3; i++) await add(off, i);
    expect(await prepared(off)).toEqual([]);
  });

  test('statements without parameters (begin, commit, DDL) are never prepared', async ({ pg }) => {
    const db = pool(pg.url);
    for (let i = 0; i < 3; i++) {
      await db.transaction().execute(async (trx) => {
        await sql`select 1 as one`.execute(trx);
      });
    }
    expect(await prepared(db)).toEqual([]);
  });

  test('a schema change under a prepared statement is re-prepared, unseen outside a transaction', async ({
    pg,
  }) => {
    await oneRowTable(pg.db, 'prep_t');
    const db = pool(pg.url);
    const read = () => sql<Record<string, unknown>>`select * from prep_t where a = ${1}`.execute(db);
    await read();
    await read();
    expect(await prepared(db)).toHaveLength(1);
    // Another connection changes the result type of the prepared statement (a rolling migration).
    await sql`alter table prep_t add column b text default 'new'`.execute(pg.db);
    expect((await read()).rows).toEqual([{ a: 1, b: 'new' }]);
    // Re-prepared under a name of the new generation on its next repeat.
    await read();
    expect((await read()).rows).toEqual([{ a: 1, b: 'new' }]);
  });

  test('inside a transaction the schema change fails the transaction once; its retry succeeds', async ({
    pg,
  }) => {
    await oneRowTable(pg.db, 'prep_u');
    const db = pool(pg.url);
    const readIn = () =>
      db.transaction().execute(async (trx) => {
        const { rows } = await sql<Record<string, unknown>>`select * from prep_u where a = ${1}`.execute(trx);
        return rows;
      });
    await readIn();
    await readIn();
    await sql`alter table prep_u add column b int default 7`.execute(pg.db);
    await expect(readIn()).rejects.toThrow(/cached plan must not change result type/);
    expect(await readIn()).toEqual([{ a: 1, b: 7 }]);
    expect(await readIn()).toEqual([{ a: 1, b: 7 }]);
  });
});
