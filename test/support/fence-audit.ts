import type { Db } from '@loopline/db';
import { sql } from 'kysely';
import { WORKER_APP_PREFIX } from './procs.ts';

// A write audit for fault tests, kept by PostgreSQL itself (triggers installed in the test's own
// database, never in the template), so "zero writes from stale fences" is checked on what was
// committed, not on what a worker says it did.
//
// Every committed change is one audit row, numbered by a sequence in the order the triggers ran:
//   acquire  sessions.fence went up (acquireFence: a new runner took the session)
//   check    a sessions update by a statement that filters on the fence (withFence's first
//            statement: `… where "fence" = $n`, or a batch of step starts' `s."fence" = i.fence`,
//            each input row's own; the row matched, so the runner's token was the current
//            fence). When that statement also changed the row (withFence's patch: the seq, step
//            count, status or progress folded into the check), a write follows the check: it was
//            made under that fence, by the same statement
//   write    any other sessions update; any insert/update of messages, parts, steps, compactions,
//            tool_outputs
// with the transaction id and the connection's application_name (worker processes connect as
// loopline-worker-<n>). Audit rows of a rolled-back transaction vanish with it.
//
// A worker write is fenced when its transaction made a check of the same session before it; the
// check's fence is the fence it wrote under. Because the check holds the session row lock until
// commit and acquireFence needs that lock, no acquire can come between a check and the writes of
// its transaction: a write whose fence is below an earlier acquire of its session would be a
// write by a runner that had already been superseded. So the decisive finding is an *unfenced*
// worker write (a write path that skips withFence, or a check that does not filter on the
// fence); stale writes are reported too, as the direct statement of the invariant.

/** Installs the audit table and triggers in the test's database. */
export async function installFenceAudit(db: Db): Promise<void> {
  await sql`
    create table if not exists fault_audit (
      id bigserial primary key,
      txid bigint not null default txid_current(),
      app text not null default current_setting('application_name'),
      session_id text not null,
      kind text not null,
      fence bigint,
      tbl text,
      row_id text,
      op text,
      -- sessions writes: the columns that changed
      cols text[],
      at timestamptz not null default clock_timestamp()
    )`.execute(db);
  await sql`create index if not exists fault_audit_txid on fault_audit (txid)`.execute(db);
  await sql`create index if not exists fault_audit_session on fault_audit (session_id, kind, id)`.execute(db);
  await sql`
    create or replace function fault_audit_sessions() returns trigger language plpgsql as $$
    begin
      if new.fence > old.fence then
        insert into fault_audit (session_id, kind, fence) values (new.id, 'acquire', new.fence);
      elsif current_query() ~* 'where.*"fence"\\s*=\\s*(\\$|i\\.fence)' then
        insert into fault_audit (session_id, kind, fence) values (new.id, 'check', new.fence);
        if (to_jsonb(new) - 'updated_at') is distinct from (to_jsonb(old) - 'updated_at') then
          insert into fault_audit (session_id, kind, fence, tbl, row_id, op, cols)
            values (new.id, 'write', new.fence, 'sessions', new.id, tg_op,
              array(select n.key from jsonb_each(to_jsonb(new)) n
                    where n.value is distinct from (to_jsonb(old) -> n.key) order by n.key));
        end if;
      else
        insert into fault_audit (session_id, kind, fence, tbl, row_id, op, cols)
          values (new.id, 'write', new.fence, 'sessions', new.id, tg_op,
            array(select n.key from jsonb_each(to_jsonb(new)) n
                  where n.value is distinct from (to_jsonb(old) -> n.key) order by n.key));
      end if;
      return null;
    end $$`.execute(db);
  await sql`
    create or replace function fault_audit_rows() returns trigger language plpgsql as $$
    begin
      insert into fault_audit (session_id, kind, tbl, row_id, op)
        values (new.session_id, 'write', tg_table_name, new.id, tg_op);
      return null;
    end $$`.execute(db);
  await sql`drop trigger if exists fault_audit_sessions on sessions`.execute(db);
  await sql`create trigger fault_audit_sessions after update on sessions
    for each row execute function fault_audit_sessions()`.execute(db);
  for (const table of ['messages', 'parts', 'steps', 'compactions', 'tool_outputs']) {
    await sql`drop trigger if exists ${sql.id(`fault_audit_${table}`)} on ${sql.id(table)}`.execute(db);
    await sql`create trigger ${sql.id(`fault_audit_${table}`)} after insert or update on ${sql.id(table)}
      for each row execute function fault_audit_rows()`.execute(db);
  }
}

export interface StaleWrite {
  auditId: number;
  sessionId: string;
  app: string;
  table: string;
  rowId: string;
  op: string;
  /** For a sessions write: the columns it changed. */
  columns?: string[] | undefined;
  /** The fence the transaction checked (null: it checked none). */
  fence: number | null;
  /** The newest fence acquired for the session before this write. */
  newestFence: number | null;
}

export interface FenceAuditReport {
  /** Worker writes under a fence older than one already acquired: must be empty. */
  staleWrites: StaleWrite[];
  /** Worker writes in a transaction that checked no fence of the session: must be empty. */
  unfencedWrites: StaleWrite[];
  /**
   * Unfenced writes of sessions.title alone: the title job holds no session lock by design (it
   * writes only `title`, only while it is null — setSessionTitleIfUnset), so it is not a runner.
   */
  titleWrites: number;
  /** Fences acquired (runners that took a session), total. */
  acquisitions: number;
  /** Worker writes audited, total. */
  workerWrites: number;
}

const isTitleWrite = (w: StaleWrite) =>
  w.table === 'sessions' && !!w.columns && w.columns.every((c) => c === 'title' || c === 'updated_at');

/** Stale and unfenced worker writes found in the audit (the file header). */
export async function analyseFenceAudit(db: Db, sessionIds?: string[]): Promise<FenceAuditReport> {
  const filter = sessionIds ? sql`and w.session_id = any(${sessionIds}::text[])` : sql``;
  const { rows } = await sql<{
    id: string;
    session_id: string;
    app: string;
    tbl: string;
    row_id: string;
    op: string;
    cols: string[] | null;
    fence: string | null;
    newest: string | null;
  }>`
    select w.id, w.session_id, w.app, w.tbl, w.row_id, w.op, w.cols,
      (select c.fence from fault_audit c
        where c.txid = w.txid and c.session_id = w.session_id and c.kind = 'check' and c.id < w.id
        order by c.id limit 1) as fence,
      (select max(a.fence) from fault_audit a
        where a.session_id = w.session_id and a.kind = 'acquire' and a.id < w.id) as newest
    from fault_audit w
    where w.kind = 'write' and w.app like ${`${WORKER_APP_PREFIX}%`} ${filter}
    order by w.id`.execute(db);
  const toWrite = (r: (typeof rows)[number]): StaleWrite => ({
    auditId: Number(r.id),
    sessionId: r.session_id,
    app: r.app,
    table: r.tbl,
    rowId: r.row_id,
    op: r.op,
    columns: r.cols ?? undefined,
    fence: r.fence === null ? null : Number(r.fence),
    newestFence: r.newest === null ? null : Number(r.newest),
  });
  const writes = rows.map(toWrite);
  const acq = await sql<{ n: string }>`
    select count(*) as n from fault_audit w where w.kind = 'acquire' ${filter}`.execute(db);
  const unfenced = writes.filter((w) => w.fence === null);
  return {
    staleWrites: writes.filter((w) => w.fence !== null && w.newestFence !== null && w.fence < w.newestFence),
    unfencedWrites: unfenced.filter((w) => !isTitleWrite(w)),
    titleWrites: unfenced.filter(isTitleWrite).length,
    acquisitions: Number(acq.rows[0]?.n ?? 0),
    workerWrites: writes.length,
  };
}
