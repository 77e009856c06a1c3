import type { SessionEvent } from '@loopline/core';
import {
  type FencedCte,
  type FencedRow,
  type FencedSessionPatch,
  type PendingDelivery,
  pendingDeliveriesOf,
  recordWebhookEvents,
  type Trx,
  webhookEventsCte,
  withFence,
} from '@loopline/db';
import { publishEvents, type WebhookEvent, webhookEventsOf } from '@loopline/queue';
import { currentTraceparent, tracingActive } from '@loopline/telemetry';
import type { Hooks, Resources, Tokens, WorkerDeps } from './deps.ts';
import { queueWebhookJobs } from './webhooks/outbox.ts';

// Every write a runner makes: a fenced transaction (docs/durability.md §3) that also records its
// webhook deliveries, then its events published after the commit (§9). Nothing else: what a run's
// end sets off (tenant slot, batch item) is the caller's explicit step (fairness/loop-stopped.ts).

export interface Fenced {
  tenantId: string;
  sessionId: string;
  fence: number;
}

/** Given to a one-statement write: the outbox CTE for the session events it will emit. */
export type OutboxCte = (events: readonly SessionEvent[]) => FencedCte[];

/** What a writer and the code holding one use through `writer.deps`. */
export type WriterDeps = Resources & Tokens & Hooks;

/** A runner's fenced writes to one session, with their events and webhook deliveries. */
export class SessionWriter {
  readonly deps: WriterDeps;
  readonly ctx: Fenced;
  constructor(deps: WriterDeps, ctx: Fenced) {
    this.deps = deps;
    this.ctx = ctx;
  }

  /** With `patch`, the fence check also writes those session fields (db withFence). */
  async write<T>(
    fn: (trx: Trx, emit: (e: SessionEvent) => void, row: FencedRow) => Promise<T>,
    patch?: FencedSessionPatch,
  ): Promise<T> {
    const events: SessionEvent[] = [];
    let deliveries: PendingDelivery[] = [];
    // Tracing on: the row keeps the trace of its last write, which the reconciler continues.
    const traceparent = tracingActive() ? currentTraceparent() : undefined;
    if (traceparent) patch = { ...patch, traceparent };
    const result = await withFence(
      this.deps.db,
      this.ctx,
      async (trx, row) => {
        const value = await fn(trx, (e) => events.push(e), row);
        deliveries = await this.record(trx, webhookEventsOf(this.ctx, events));
        return value;
      },
      patch,
    );
    await this.publish(events);
    await queueWebhookJobs(this.deps, deliveries);
    return result;
  }

  /**
   * A fenced write in ONE statement that checks the fence itself (no BEGIN/COMMIT): `fn` throws
   * StaleFenceError when stale and puts `outbox(events)` among its CTEs so deliveries commit with
   * it; one emitted without is recorded afterwards and logged (a crash between would lose it).
   */
  async writeStatement<T>(
    fn: (emit: (e: SessionEvent) => void, outbox: OutboxCte) => Promise<T>,
  ): Promise<T> {
    const events: SessionEvent[] = [];
    const inStatement = new Set<string>();
    const outbox: OutboxCte = (planned) => {
      const hooks = webhookEventsOf(this.ctx, planned);
      for (const h of hooks) inStatement.add(h.id);
      return hooks.length > 0 ? [webhookEventsCte(this.ctx.tenantId, hooks, currentTraceparent())] : [];
    };
    const result = await fn((e) => events.push(e), outbox);
    const hooks = webhookEventsOf(this.ctx, events);
    const late = hooks.filter((h) => !inStatement.has(h.id));
    let deliveries: PendingDelivery[] = [];
    if (hooks.length > 0) {
      try {
        if (late.length > 0)
          this.deps.logger.error(
            { tenantId: this.ctx.tenantId, sessionId: this.ctx.sessionId, events: late.map((h) => h.type) },
            'webhook events emitted by a one-statement write without its outbox CTE',
          );
        const recorded = hooks.filter((h) => inStatement.has(h.id)).map((h) => h.id);
        deliveries = [
          ...(await this.record(this.deps.db, late)),
          ...(await pendingDeliveriesOf(this.deps.db, this.ctx.tenantId, recorded)),
        ];
      } catch (err) {
        // Committed already: the step goes on; recorded deliveries get their jobs from the reconciler.
        this.deps.logger.warn({ err, tenantId: this.ctx.tenantId }, 'webhook deliveries not read back');
      }
    }
    await this.publish(events);
    await queueWebhookJobs(this.deps, deliveries);
    return result;
  }

  /** The outbox insert of a write's webhook events (none for most writes: no statement). */
  private async record(
    db: Trx | WorkerDeps['db'],
    hooks: readonly WebhookEvent[],
  ): Promise<PendingDelivery[]> {
    if (hooks.length === 0) return [];
    const ids = await recordWebhookEvents(db, this.ctx.tenantId, hooks, currentTraceparent());
    return ids.map((id) => ({ id, tenantId: this.ctx.tenantId, jobId: id }));
  }

  async publish(events: SessionEvent[]): Promise<void> {
    try {
      await publishEvents(this.deps.redis, this.deps.keys, this.ctx.sessionId, events);
    } catch (err) {
      // Events are a live view; PostgreSQL holds the truth. A lost event must not fail the step.
      this.deps.logger.warn(
        { err, tenantId: this.ctx.tenantId, sessionId: this.ctx.sessionId },
        'event publish failed',
      );
    }
  }
}
