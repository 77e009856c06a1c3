import { type ErrorData, errorData } from '@loopline/core';
import { sql } from 'kysely';
import type { Db, Trx } from '../client.ts';
import { toJsonOrNull } from '../tables/columns.ts';
import type { CompactionReason } from '../tables/compaction.table.ts';
import { type CompactionInfo, toCompaction } from './mappers.ts';

// Compaction records (docs/context.md §5.7): one row per run of a compaction point. A run that
// starts closes any earlier run of the same point still marked running (its worker died), so
// at most one run per point is ever `running`. Rows are never deleted.

export interface StartCompactionInput {
  /** Caller-derived (e.g. from the compaction part and job attempt) so a replayed start is a no-op. */
  id: string;
  tenantId: string;
  sessionId: string;
  /** The compaction user message and its compaction part. */
  messageId: string;
  partId: string;
  reason: CompactionReason;
  model?: string | null;
  tokensBefore?: number | null;
  jobId?: string | null;
  attempt?: number | null;
}

/** Records a run of a compaction point, closing an earlier run of it still marked running. */
export async function startCompaction(trx: Trx, input: StartCompactionInput): Promise<void> {
  await closeInterruptedRuns(trx, input.tenantId, input.messageId, {
    except: input.id,
    why: 'a later run of this compaction started',
  });
  await trx
    .insertInto('compactions')
    .values({
      id: input.id,
      tenant_id: input.tenantId,
      session_id: input.sessionId,
      message_id: input.messageId,
      part_id: input.partId,
      reason: input.reason,
      model: input.model ?? null,
      tokens_before: input.tokensBefore ?? null,
      job_id: input.jobId ?? null,
      attempt: input.attempt ?? null,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/**
 * Closes the runs of a compaction point still marked running (their worker died or froze), as
 * failed with a StepInterruptedError saying why; `except` keeps the run that is starting.
 */
export async function closeInterruptedRuns(
  trx: Trx,
  tenantId: string,
  messageId: string,
  opts: { except?: string; why: string },
): Promise<void> {
  let update = trx
    .updateTable('compactions')
    .set({
      status: 'failed',
      finished_at: sql<Date>`now()`,
      duration_ms: sql<number>`(extract(epoch from now() - started_at) * 1000)::int`,
      error: toJsonOrNull(errorData('StepInterruptedError', opts.why)),
    })
    .where('tenant_id', '=', tenantId)
    .where('message_id', '=', messageId)
    .where('status', '=', 'running');
  if (opts.except !== undefined) update = update.where('id', '!=', opts.except);
  await update.execute();
}

export interface FinishCompactionInput {
  status: 'completed' | 'failed' | 'noop';
  /** Model requests the run made (retries, chunks, merge). */
  requests?: number | null;
  /** The ladder rung that produced the summary. */
  rung?: string | null;
  summaryMessageId?: string | null;
  tokensBefore?: number | null;
  tokensAfter?: number | null;
  headMessages?: number | null;
  tailStartId?: string | null;
  model?: string | null;
  error?: ErrorData | null;
}

/** Closes a running compaction; false when it is absent or already closed. */
export async function finishCompaction(
  trx: Trx,
  tenantId: string,
  id: string,
  input: FinishCompactionInput,
): Promise<boolean> {
  const result = await trx
    .updateTable('compactions')
    .set((eb) => ({
      status: input.status,
      finished_at: sql<Date>`now()`,
      duration_ms: sql<number>`(extract(epoch from now() - started_at) * 1000)::int`,
      rung: input.rung ?? eb.ref('rung'),
      summary_message_id: input.summaryMessageId ?? eb.ref('summary_message_id'),
      tokens_before: input.tokensBefore ?? eb.ref('tokens_before'),
      tokens_after: input.tokensAfter ?? eb.ref('tokens_after'),
      head_messages: input.headMessages ?? eb.ref('head_messages'),
      tail_start_id: input.tailStartId ?? eb.ref('tail_start_id'),
      model: input.model ?? eb.ref('model'),
      requests: input.requests ?? eb.ref('requests'),
      error: toJsonOrNull(input.error),
    }))
    .where('id', '=', id)
    .where('tenant_id', '=', tenantId)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Oldest first; with `newest`, only that many of the newest (still oldest first). */
export async function listCompactions(
  db: Db,
  tenantId: string,
  sessionId: string,
  opts: { newest?: number } = {},
): Promise<CompactionInfo[]> {
  let query = db
    .selectFrom('compactions')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('tenant_id', '=', tenantId);
  if (opts.newest === undefined) {
    const rows = await query.orderBy('started_at').orderBy('id').execute();
    return rows.map(toCompaction);
  }
  query = query.orderBy('started_at', 'desc').orderBy('id', 'desc').limit(opts.newest);
  return (await query.execute()).map(toCompaction).reverse();
}

/**
 * What a session view says of its compactions, counted by PostgreSQL: the completed ones whose
 * compaction message is not reverted, when the newest of them ended, and the newest run whose
 * message is not reverted. A session's compaction rows grow with every request to compact it, so
 * the view never reads them all.
 */
export async function compactionSummaryOf(
  db: Db,
  tenantId: string,
  sessionId: string,
): Promise<{ completed: number; lastAt: Date | null; last: CompactionInfo | null }> {
  const { rows } = await sql<{ completed: number; last_at: Date | null; last_id: string | null }>`
    select count(*) filter (where c.status = 'completed')::int as completed,
      (array_agg(coalesce(c.finished_at, c.started_at) order by c.started_at desc, c.id desc)
        filter (where c.status = 'completed'))[1] as last_at,
      (array_agg(c.id order by c.started_at desc, c.id desc))[1] as last_id
    from compactions c
    join messages m on m.id = c.message_id and m.tenant_id = c.tenant_id
    where c.session_id = ${sessionId} and c.tenant_id = ${tenantId} and not m.reverted`.execute(db);
  const row = rows[0];
  const lastId = row?.last_id ?? null;
  const last = lastId
    ? await db
        .selectFrom('compactions')
        .selectAll()
        .where('id', '=', lastId)
        .where('tenant_id', '=', tenantId)
        .executeTakeFirst()
    : undefined;
  return {
    completed: row?.completed ?? 0,
    lastAt: row?.last_at ? new Date(row.last_at) : null,
    last: last ? toCompaction(last) : null,
  };
}

/**
 * The newest completed (or no-op) compaction of a session whose compaction message is not
 * reverted: its `tokensAfter` feeds the loop's growth guard (no second automatic compaction
 * without growth; a no-op records tokensAfter = tokensBefore, so it holds the loop back too).
 */
export async function latestCompletedCompaction(
  db: Db,
  tenantId: string,
  sessionId: string,
): Promise<CompactionInfo | undefined> {
  const row = await db
    .selectFrom('compactions as c')
    .innerJoin('messages as m', (join) =>
      join.onRef('m.id', '=', 'c.message_id').onRef('m.tenant_id', '=', 'c.tenant_id'),
    )
    .selectAll('c')
    .where('c.session_id', '=', sessionId)
    .where('c.tenant_id', '=', tenantId)
    .where('c.status', 'in', ['completed', 'noop'])
    .where('m.reverted', '=', false)
    .orderBy('c.finished_at', 'desc')
    .orderBy('c.id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? toCompaction(row) : undefined;
}
