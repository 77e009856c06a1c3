import type { SessionEvent } from '@loopline/core';
import { type FencedRow, type FencedSessionPatch, type Trx, withFence } from '@loopline/db';
import { publishEvents } from '@loopline/queue';
import type { WorkerDeps } from './deps.ts';
import { afterRunStopped } from './fairness/loop-stopped.ts';
import { enqueueWebhookEvents } from './webhooks/enqueue.ts';
import { webhookEventsOf } from './webhooks/events.ts';

// Every write a runner makes goes through here: one PostgreSQL transaction that first checks the
// fence (a stale runner's write throws StaleFenceError and rolls back), then the session's
// events are published to its Redis stream — after the commit, never before. A status that ends
// the run (idle, error, waiting) then frees the tenant slot and wakes the batch item (fairness/),
// and the events a tenant subscribed to become webhook deliveries (webhooks/).

export interface Fenced {
  tenantId: string;
  sessionId: string;
  fence: number;
}

export class SessionWriter {
  readonly deps: WorkerDeps;
  readonly ctx: Fenced;
  constructor(deps: WorkerDeps, ctx: Fenced) {
    this.deps = deps;
    this.ctx = ctx;
  }

  /** With `patch`, the fence check also writes those session fields (db withFence). */
  async write<T>(
    fn: (trx: Trx, emit: (e: SessionEvent) => void, row: FencedRow) => Promise<T>,
    patch?: FencedSessionPatch,
  ): Promise<T> {
    const events: SessionEvent[] = [];
    const result = await withFence(
      this.deps.db,
      this.ctx,
      (trx, row) => fn(trx, (e) => events.push(e), row),
      patch,
    );
    await this.publish(events);
    await afterRunStopped(this.deps, this.ctx, events);
    await enqueueWebhookEvents(this.deps, this.ctx.tenantId, webhookEventsOf(this.ctx, events));
    return result;
  }

  /**
   * A fenced write that is ONE statement (its own transaction) checking the fence itself, e.g.
   * db startAssistantStep: no BEGIN/COMMIT round trips. `fn` must throw StaleFenceError and write
   * nothing when the fence is stale; the events are published after it returns (committed).
   */
  async writeStatement<T>(fn: (emit: (e: SessionEvent) => void) => Promise<T>): Promise<T> {
    const events: SessionEvent[] = [];
    const result = await fn((e) => events.push(e));
    await this.publish(events);
    await afterRunStopped(this.deps, this.ctx, events);
    await enqueueWebhookEvents(this.deps, this.ctx.tenantId, webhookEventsOf(this.ctx, events));
    return result;
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
