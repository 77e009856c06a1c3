import { type AgentConfig, type ErrorData, newId } from '@loopline/core';
import { sql } from 'kysely';
import type { Db, Trx } from '../client.ts';
import type {
  BatchItemResult,
  BatchItemRow,
  BatchItemStatus,
  BatchMessage,
  BatchRow,
  BatchStatus,
} from '../tables/batch.table.ts';
import { toJson, toJsonOrNull } from '../tables/columns.ts';
import { recordWebhookEvents, type WebhookOutboxEvent } from './webhooks.ts';

// Batches: created in one transaction with a session per conversation (kind `batch`); the worker
// posts each item's messages (recordItemSent in the append's transaction), finishes items with
// their result, and completes the batch. Cancel marks the batch and its unfinished items at once.

/** statusDetail of a session its batch's cancel stopped. */
export const BATCH_CANCELLED_DETAIL = 'cancelled with its batch';

/** Rows per multi-row INSERT (PostgreSQL caps bind parameters at 65,535). */
const CHUNK = 1_000;

export interface BatchInfo {
  id: string;
  tenantId: string;
  agentName: string;
  status: BatchStatus;
  total: number;
  metadata: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  cancelledAt: Date | null;
  completedAt: Date | null;
}

/** A batches row as BatchInfo. */
export function toBatch(row: BatchRow): BatchInfo {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    agentName: row.agent_name,
    status: row.status,
    total: row.total,
    metadata: row.metadata,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    cancelledAt: row.cancelled_at,
    completedAt: row.completed_at,
  };
}

export interface BatchItemInfo {
  batchId: string;
  index: number;
  tenantId: string;
  sessionId: string;
  messages: BatchMessage[];
  sent: number;
  status: BatchItemStatus;
  result: BatchItemResult | null;
  error: ErrorData | null;
  finishedAt: Date | null;
}

function toItem(row: BatchItemRow): BatchItemInfo {
  return {
    batchId: row.batch_id,
    index: row.idx,
    tenantId: row.tenant_id,
    sessionId: row.session_id,
    messages: row.messages,
    sent: row.sent,
    status: row.status,
    result: row.result,
    error: row.error,
    finishedAt: row.finished_at,
  };
}

export interface CreateBatchInput {
  tenantId: string;
  agentName: string;
  /** The agent's config, resolved once and frozen on every session of the batch. */
  agent: AgentConfig;
  conversations: { messages: BatchMessage[]; metadata?: Record<string, unknown> }[];
  metadata?: Record<string, unknown>;
  /** The creating request's trace context (tracing on): a re-added flow continues it. */
  traceparent?: string;
  /**
   * Most conversations the tenant's running batches may hold with this one (absent: no cap). Past
   * it nothing is written and BatchCapError says how many are running.
   */
  maxRunning?: number;
}

/** The tenant's running batches already hold too many conversations for this batch. */
export class BatchCapError extends Error {
  readonly running: number;
  readonly max: number;
  constructor(running: number, max: number) {
    super(`the tenant's running batches hold ${running} conversations; at most ${max}`);
    this.name = 'BatchCapError';
    this.running = running;
    this.max = max;
  }
}

/** The batch, its sessions and its items, in one transaction. Items are in input order. */
export async function createBatch(
  db: Db,
  input: CreateBatchInput,
): Promise<{ batch: BatchInfo; items: { index: number; sessionId: string }[] }> {
  return db.transaction().execute(async (trx) => {
    if (input.maxRunning !== undefined) {
      // One creation at a time per tenant (a transaction-scoped advisory lock), so two requests
      // cannot both pass the count; other tenants do not wait. The count is a statement of its
      // own: read committed takes its snapshot when a statement starts, so a count in the locking
      // statement would not see the batch the lock waited for.
      await sql`select pg_advisory_xact_lock(hashtextextended(${`batches:${input.tenantId}`}, 0))`.execute(
        trx,
      );
      const { rows } = await sql<{ running: string }>`
        select coalesce(sum(total), 0)::text as running from batches
        where tenant_id = ${input.tenantId} and status = 'running'`.execute(trx);
      const running = Number(rows[0]?.running ?? 0);
      if (running + input.conversations.length > input.maxRunning)
        throw new BatchCapError(running, input.maxRunning);
    }
    const batch = await trx
      .insertInto('batches')
      .values({
        id: newId('bat'),
        tenant_id: input.tenantId,
        agent_name: input.agentName,
        total: input.conversations.length,
        metadata: toJson(input.metadata ?? {}),
        traceparent: input.traceparent ?? null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const agent = toJson(input.agent);
    const items = input.conversations.map((c, index) => ({ index, sessionId: newId('ses'), ...c }));
    for (let start = 0; start < items.length; start += CHUNK) {
      const chunk = items.slice(start, start + CHUNK);
      // The frozen agent config is one parameter of the statement, not one per row: a chunk of a
      // thousand sessions sends it once (a 256 KiB config was 256 MB of bind message per chunk).
      await sql`
        insert into sessions (id, tenant_id, agent_name, agent, kind, metadata)
        select s.id, ${input.tenantId}, ${input.agentName}, ${agent}::jsonb, 'batch', s.metadata::jsonb
        from unnest(${chunk.map((i) => i.sessionId)}::text[], ${chunk.map((i) => toJson(i.metadata ?? {}))}::text[])
          as s(id, metadata)`.execute(trx);
      await trx
        .insertInto('batch_items')
        .values(
          chunk.map((item) => ({
            batch_id: batch.id,
            idx: item.index,
            tenant_id: input.tenantId,
            session_id: item.sessionId,
            messages: toJson(item.messages),
          })),
        )
        .execute();
    }
    return { batch: toBatch(batch), items: items.map(({ index, sessionId }) => ({ index, sessionId })) };
  });
}

/** The tenant's batch, or undefined. */
export async function getBatch(db: Db, tenantId: string, batchId: string): Promise<BatchInfo | undefined> {
  const row = await db
    .selectFrom('batches')
    .selectAll()
    .where('id', '=', batchId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row ? toBatch(row) : undefined;
}

export type BatchState = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
export type BatchCounts = Record<BatchState, number>;

/** An item's state: its own once finished, else running/queued from its session's status. */
const itemState = sql<BatchState>`case when i.status = 'active' then
  case when s.status in ('running', 'compacting', 'waiting') then 'running' else 'queued' end
  else i.status end`;

/**
 * Items by state. Finished items by their own status; an unfinished one is `running` while its
 * session runs (running, compacting, waiting for client tools) and `queued` otherwise (not posted
 * yet, waiting for a worker, a tenant slot or token budget).
 */
export async function batchCounts(db: Db, tenantId: string, batchId: string): Promise<BatchCounts> {
  const rows = await db
    .selectFrom('batch_items as i')
    .innerJoin('sessions as s', 's.id', 'i.session_id')
    .select([itemState.as('state'), (eb) => eb.fn.countAll<string>().as('n')])
    .where('i.batch_id', '=', batchId)
    .where('i.tenant_id', '=', tenantId)
    .groupBy('state')
    .execute();
  const counts: BatchCounts = { queued: 0, running: 0, completed: 0, failed: 0, cancelled: 0 };
  for (const row of rows) counts[row.state] = Number(row.n);
  return counts;
}

/**
 * A page of items in index order, after `afterIndex` (keyset pagination for the results stream),
 * each with its state (as batchCounts counts it) and its session's metadata.
 */
export async function listBatchItems(
  db: Db,
  tenantId: string,
  batchId: string,
  opts: { afterIndex?: number; limit?: number } = {},
): Promise<(BatchItemInfo & { state: BatchState; metadata: Record<string, unknown> })[]> {
  const rows = await db
    .selectFrom('batch_items as i')
    .innerJoin('sessions as s', 's.id', 'i.session_id')
    .selectAll('i')
    .select([itemState.as('state'), 's.metadata'])
    .where('i.batch_id', '=', batchId)
    .where('i.tenant_id', '=', tenantId)
    .where('i.idx', '>', opts.afterIndex ?? -1)
    .orderBy('i.idx')
    .limit(Math.min(Math.max(opts.limit ?? 500, 1), 5_000))
    .execute();
  return rows.map(({ state, metadata, ...row }) => ({ ...toItem(row), state, metadata }));
}

/** The item a batch session belongs to, with its batch's status. */
export async function getBatchItemBySession(
  db: Db,
  tenantId: string,
  sessionId: string,
): Promise<(BatchItemInfo & { batchStatus: BatchStatus }) | undefined> {
  const row = await db
    .selectFrom('batch_items as i')
    .innerJoin('batches as b', 'b.id', 'i.batch_id')
    .selectAll('i')
    .select('b.status as batch_status')
    .where('i.session_id', '=', sessionId)
    .where('i.tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) return undefined;
  const { batch_status, ...item } = row;
  return { ...toItem(item), batchStatus: batch_status };
}

/**
 * Counts message number `sent` as posted, in the append's transaction: false when another run got
 * there first (or the item is no longer active), which rolls that append back.
 */
export async function recordItemSent(
  trx: Trx,
  batchId: string,
  index: number,
  sent: number,
): Promise<boolean> {
  const result = await trx
    .updateTable('batch_items')
    .set({ sent: sent + 1 })
    .where('batch_id', '=', batchId)
    .where('idx', '=', index)
    .where('sent', '=', sent)
    .where('status', '=', 'active')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Finishes an active item; false when it already was finished (or cancelled). */
export async function finishBatchItem(
  db: Db,
  batchId: string,
  index: number,
  outcome: { status: 'completed' | 'failed'; result?: BatchItemResult | null; error?: ErrorData | null },
): Promise<boolean> {
  const result = await db
    .updateTable('batch_items')
    .set({
      status: outcome.status,
      result: toJsonOrNull(outcome.result),
      error: toJsonOrNull(outcome.error),
      finished_at: sql<Date>`now()`,
    })
    .where('batch_id', '=', batchId)
    .where('idx', '=', index)
    .where('status', '=', 'active')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export interface CancelledBatch {
  batch: BatchInfo;
  /** Sessions of the items this cancel marked cancelled. */
  cancelledSessionIds: string[];
  /** Those of them that were only queued and are now idle. */
  stoppedSessionIds: string[];
  /** Those of them in the middle of a run (running, compacting, waiting): abort them. */
  runningSessionIds: string[];
  /** Webhook deliveries recorded with the cancel (the stopped sessions' events): add their jobs. */
  deliveryIds: string[];
}

/**
 * Cancels a running batch in one transaction: it and its unfinished items are marked cancelled
 * (items and admission check this first), `queued` sessions go `idle` with `detail`, running ones
 * stop at their next model call. A finished batch is returned as it is; undefined when unknown.
 */
export async function cancelBatch(
  db: Db,
  tenantId: string,
  batchId: string,
  detail: string,
  /** The webhook events of the sessions stopped (recorded in the same transaction, the outbox). */
  outbox?: (stoppedSessionIds: string[]) => WebhookOutboxEvent[],
): Promise<CancelledBatch | undefined> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('batches')
      .selectAll()
      .where('id', '=', batchId)
      .where('tenant_id', '=', tenantId)
      .forUpdate()
      .executeTakeFirst();
    if (!row) return undefined;
    if (row.status !== 'running')
      return {
        batch: toBatch(row),
        cancelledSessionIds: [],
        stoppedSessionIds: [],
        runningSessionIds: [],
        deliveryIds: [],
      };
    const updated = await trx
      .updateTable('batches')
      .set({ status: 'cancelled', cancelled_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
      .where('id', '=', batchId)
      .returningAll()
      .executeTakeFirstOrThrow();
    const items = await trx
      .updateTable('batch_items')
      .set({ status: 'cancelled', finished_at: sql<Date>`now()` })
      .where('batch_id', '=', batchId)
      .where('status', '=', 'active')
      .returning('session_id')
      .execute();
    const cancelledSessionIds = items.map((i) => i.session_id);
    const stopped: { id: string }[] = [];
    const running: { id: string }[] = [];
    for (let start = 0; start < cancelledSessionIds.length; start += CHUNK) {
      const ids = cancelledSessionIds.slice(start, start + CHUNK);
      running.push(
        ...(await trx
          .selectFrom('sessions')
          .select('id')
          .where('id', 'in', ids)
          .where('tenant_id', '=', tenantId)
          .where('status', 'in', ['running', 'compacting', 'waiting'])
          .execute()),
      );
      stopped.push(
        ...(await trx
          .updateTable('sessions')
          .set({ status: 'idle', status_detail: detail, error: null, updated_at: sql<Date>`now()` })
          .where('id', 'in', ids)
          .where('tenant_id', '=', tenantId)
          .where('status', '=', 'queued')
          .returning('id')
          .execute()),
      );
    }
    const stoppedSessionIds = stopped.map((r) => r.id);
    const events = outbox && stoppedSessionIds.length > 0 ? outbox(stoppedSessionIds) : [];
    return {
      batch: toBatch(updated),
      cancelledSessionIds,
      stoppedSessionIds,
      runningSessionIds: running.map((r) => r.id),
      deliveryIds: await recordWebhookEvents(trx, tenantId, events),
    };
  });
}

/**
 * Completes a running batch once its items are done; an item still active (its job failed for
 * good) is marked failed with `error`. A cancelled batch keeps its status. `outbox`: webhook
 * events recorded in the same transaction; returns the deliveries created (add their jobs).
 */
export async function completeBatch(
  db: Db,
  batchId: string,
  error: ErrorData,
  outbox?: { tenantId: string; events: WebhookOutboxEvent[]; traceparent?: string },
): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    await trx
      .updateTable('batch_items')
      .set({ status: 'failed', error: toJson(error), finished_at: sql<Date>`now()` })
      .where('batch_id', '=', batchId)
      .where('status', '=', 'active')
      .execute();
    await trx
      .updateTable('batches')
      .set({ status: 'completed', completed_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
      .where('id', '=', batchId)
      .where('status', '=', 'running')
      .execute();
    return outbox ? recordWebhookEvents(trx, outbox.tenantId, outbox.events, outbox.traceparent) : [];
  });
}

/** True when the session belongs to a batch item that was cancelled. */
export async function isBatchItemCancelled(db: Db, tenantId: string, sessionId: string): Promise<boolean> {
  const row = await db
    .selectFrom('batch_items')
    .select('status')
    .where('session_id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row?.status === 'cancelled';
}
