import { deferredCalls, filterCompacted, pendingCompaction, type SessionStatus } from '@loopline/core';
import {
  getSession,
  listRunningBatches,
  listStalledSessions,
  listStalledWaitingSessions,
  loadHistory,
  type PendingDelivery,
  type SessionInfo,
  type StalledSession,
} from '@loopline/db';
import {
  addBatchFlow,
  JOBS,
  jobIds,
  type ReconcileJob,
  type StepJob,
  WAKE,
  wakeSession,
} from '@loopline/queue';
import { continueTrace, sessionAttributes } from '@loopline/telemetry';
import type { Job, JobType } from 'bullmq';
import type { Jobs, Log, Resources, Store, WorkerDeps } from './deps.ts';
import { sessionPriority } from './fairness/options.ts';
import { DELIVERY_GRACE_MS, healWebhookDeliveries } from './webhooks/outbox.ts';

// The reconciler: the safety net for sessions that say work is due (queued, running, compacting,
// or waiting with a wake-up due) but that nothing will move again, e.g. after a Redis restart
// lost every job and lock. A BullMQ job scheduler runs reconcileOnce: stalled rows in PostgreSQL,
// minus those with a lock or a pending job in Redis, each get one job under
// `reconcile-<session>-f<fence>`; lost batch flows and webhook delivery jobs are added again.
// Safe because a job carries ids only and re-derives everything under the lock and a new fence,
// and the fence in the id collapses overlapping runs onto one job: docs/durability.md §7, §9.

/** Statuses in which a job or a lock holder must exist. `waiting` is woken by answers, `idle`/`error` by messages. */
export const RECONCILED_STATUSES: readonly SessionStatus[] = ['queued', 'running', 'compacting'];
/** Also looked at, when the log says a wake-up is due (listStalledWaitingSessions). */
const WAITING: SessionStatus = 'waiting';

/** The job scheduler's id (one per namespace: queue keys carry the namespace prefix). */
export const RECONCILE_SCHEDULER_ID = 'reconcile';

/** The loop's queues: a pending job in one of them will move the session. */
const LOOP_QUEUES = ['step', 'compact', 'prune'] as const;
const PENDING: JobType[] = ['active', 'wait', 'prioritized', 'delayed', 'waiting-children'];

export interface ReconcileOptions {
  /** Period of the scheduler; 0 turns the reconciler off (the scheduler is removed). */
  intervalMs: number;
  /** How long a session's row must be unchanged before it is a candidate. */
  afterMs: number;
}

/**
 * LOOPLINE_RECONCILE_INTERVAL_MS (default 30 s; 0 = off) and LOOPLINE_RECONCILE_AFTER_MS (0 or
 * unset: 2 × the lock TTL), as parsed by config.ts.
 */
export function reconcileOptions(intervalMs: number, afterMs: number, lockTtlMs: number): ReconcileOptions {
  return { intervalMs, afterMs: Math.max(1, afterMs > 0 ? afterMs : 2 * lockTtlMs) };
}

/** The reconciler's job id for a session at a fence, on the step or the compact queue (the wake catalogue's). */
export const reconcileJobId = (sessionId: string, fence: number) =>
  WAKE.reconcile.jobId({ sessionId, fence });

/**
 * The session a loop job is for, from its id: every id of the catalog names its session first
 * (`step-<ses>-…`, `wake-<ses>-…`, `child-<parent>-<child>-…`). Undefined for any other id.
 */
export function sessionOfJobId(jobId: string): string | undefined {
  return /\bses_[0-9a-z]+/.exec(jobId)?.[0];
}

export interface ReconcileResult {
  /** Stalled in PostgreSQL. */
  candidates: number;
  locked: number;
  pending: number;
  /** Moved on between the read and the wake (status or fence changed). */
  moved: number;
  woken: Array<{
    tenantId: string;
    sessionId: string;
    status: SessionStatus;
    queue: 'step' | 'compact';
    jobId: string;
    /** A waiting session's wake: what was due (a timeout job re-added: `tool-timeout`, delayed). */
    reason?: StepJob['reason'];
    /** The job was added delayed (a client call's timeout still ahead). */
    delayed?: boolean;
  }>;
  /** Running batches whose flow Redis had lost, re-added (their active item count). */
  batches: Array<{ tenantId: string; batchId: string; items: number }>;
  /** Pending webhook deliveries whose job was lost, re-added (webhooks/outbox.ts). */
  deliveries: PendingDelivery[];
}

/** One reconciler pass (the scheduler's job; tests call it directly). */
export async function reconcileOnce(
  deps: Resources,
  opts: {
    afterMs: number;
    limit?: number;
    /** How long a pending delivery may go untouched before its job is checked; default min(afterMs, 10 s). */
    deliveryGraceMs?: number;
  },
): Promise<ReconcileResult> {
  const result: ReconcileResult = {
    candidates: 0,
    locked: 0,
    pending: 0,
    moved: 0,
    woken: [],
    batches: [],
    deliveries: [],
  };
  const limit = opts.limit !== undefined ? { limit: opts.limit } : {};
  const stalled = [
    ...(await listStalledSessions(deps.db, {
      statuses: RECONCILED_STATUSES,
      idleForMs: opts.afterMs,
      ...limit,
    })),
    ...(await listStalledWaitingSessions(deps.db, { idleForMs: opts.afterMs, ...limit })),
  ];
  result.candidates = stalled.length;
  result.batches = await reconcileBatches(deps, opts.afterMs);
  result.deliveries = await healWebhookDeliveries(deps, {
    graceMs: opts.deliveryGraceMs ?? Math.min(opts.afterMs, DELIVERY_GRACE_MS),
    ...limit,
  });
  if (stalled.length === 0) return result;

  // Locks first, then jobs: a runner takes the lock before its job leaves the active list, and
  // enqueues its follow-up before it releases the lock, so one of the two is always visible.
  // One EXISTS per session, not a pipeline: under Redis Cluster the lock keys live on different slots.
  const locked = await Promise.all(
    // An error counts as unlocked: a spurious wake is harmless.
    stalled.map((s) => deps.redis.exists(deps.keys.lock(s.sessionId)).catch(() => 0)),
  );
  const unlocked = stalled.filter((_, i) => locked[i] !== 1);
  result.locked = stalled.length - unlocked.length;
  if (unlocked.length === 0) return result;

  // Job ids only (no job hashes): one range read per queue.
  const pending = new Set<string>();
  for (const kind of LOOP_QUEUES)
    for (const id of await deps.queues[kind].getRanges(PENDING, 0, -1)) {
      const sid = sessionOfJobId(id);
      if (sid) pending.add(sid);
    }

  for (const s of unlocked) {
    if (pending.has(s.sessionId)) {
      result.pending++;
      continue;
    }
    try {
      // The wake continues the session's own trace (its last fenced write's), linked to this pass.
      const woken = await continueTrace(
        'reconcile wake',
        s.traceparent ?? undefined,
        { ...sessionAttributes(s), 'loopline.session.status': s.status },
        () => wakeStalled(deps, s),
      );
      if (woken) result.woken.push(woken);
      else result.moved++;
    } catch (err) {
      deps.logger.warn(
        { err, tenantId: s.tenantId, sessionId: s.sessionId },
        'reconciler could not wake a session',
      );
    }
  }
  return result;
}

async function wakeStalled(
  deps: Store & Jobs & Log,
  s: StalledSession,
): Promise<ReconcileResult['woken'][number] | undefined> {
  const { tenantId, sessionId } = s;
  // Re-read: a runner that started since the scan bumped the fence (or the status changed).
  const now = await getSession(deps.db, tenantId, sessionId);
  if (!now || now.fence !== s.fence || now.status !== s.status) return undefined;
  if (now.status === WAITING) return wakeWaiting(deps, now);
  if (!RECONCILED_STATUSES.includes(now.status)) return undefined;
  const jobId = reconcileJobId(sessionId, s.fence);
  const priority = sessionPriority(now);
  let queue: 'step' | 'compact' = 'step';
  if (now.status === 'compacting') {
    // Its compaction job was lost: re-add it when the marker is there. Without a marker the prune
    // pass before it was lost; the step re-decides (and asks for the compaction again if needed).
    const history = await loadHistory(deps.db, tenantId, sessionId, { fromSeq: now.boundarySeq });
    const marker = pendingCompaction(filterCompacted(history));
    if (marker) {
      queue = 'compact';
      await deps.queues.add(
        'compact',
        jobId,
        { tenantId, sessionId, messageId: marker.message.info.id },
        { priority },
      );
    }
  }
  if (queue === 'step')
    await wakeSession(deps.queues, 'reconcile', { sessionId, fence: s.fence }, { tenantId, kind: now.kind });
  deps.logger.warn(
    { tenantId, sessionId, status: now.status, fence: s.fence, jobId, queue: JOBS[queue].queue },
    'reconciler re-woke a stalled session',
  );
  return { tenantId, sessionId, status: now.status, queue, jobId };
}

/**
 * A waiting session none of whose wake-up jobs is pending: a step now if the log says a wait is
 * over (a client call past its deadline, a child that stopped, an abort recorded), else the
 * timeout jobs of its client calls with a deadline ahead. Undefined when nothing is due.
 */
async function wakeWaiting(
  deps: Store & Jobs & Log,
  session: SessionInfo,
): Promise<ReconcileResult['woken'][number] | undefined> {
  const { tenantId, id: sessionId } = session;
  const base = { tenantId, sessionId, status: session.status, queue: 'step' as const };
  const log = (woken: ReconcileResult['woken'][number]) => {
    deps.logger.warn(
      { ...woken, fence: session.fence, queue: JOBS.step.queue },
      'reconciler re-woke a stalled session',
    );
    return woken;
  };
  let due: 'abort' | 'tool-timeout' | 'child-done' | undefined =
    session.abortRequestedSeq !== null ? 'abort' : undefined;
  const ahead: Array<{ callId: string; deadline: number }> = [];
  if (!due) {
    const history = await loadHistory(deps.db, tenantId, sessionId, { fromSeq: session.boundarySeq });
    const nowMs = Date.now();
    for (const call of deferredCalls(filterCompacted(history))) {
      if (call.awaiting === 'client') {
        if (call.deadline === undefined) continue; // waits for its answer, however long
        if (call.deadline <= nowMs) due = 'tool-timeout';
        else ahead.push({ callId: call.callId, deadline: call.deadline });
      } else if (await childStopped(deps, tenantId, call.childSessionId)) due ??= 'child-done';
    }
  }
  if (due) {
    // Per fence, like every reconciler wake: the deterministic ids of the original jobs
    // (timeout-…, child-…) may be kept by BullMQ as completed, and adding them again would be a no-op.
    const args = { sessionId, fence: session.fence };
    const jobId = await wakeSession(deps.queues, 'reconcile', args, {
      tenantId,
      kind: session.kind,
      reason: due,
    });
    return log({ ...base, jobId, reason: due });
  }
  if (ahead.length === 0) return undefined;
  let jobId = '';
  for (const call of ahead) {
    // Its own id (the one enterWait uses): a no-op when the job is there.
    const delayMs = Math.max(0, call.deadline - Date.now());
    jobId = await wakeSession(
      deps.queues,
      'tool-timeout',
      { sessionId, callId: call.callId },
      { tenantId, delayMs },
    );
  }
  return log({ ...base, jobId, reason: 'tool-timeout', delayed: true });
}

/** The child stopped (idle or error, no abort pending) or is gone: the parent has an answer to write. */
async function childStopped(deps: Store, tenantId: string, childId: string | undefined): Promise<boolean> {
  if (!childId) return true;
  const child = await getSession(deps.db, tenantId, childId);
  if (!child) return true;
  return (child.status === 'idle' || child.status === 'error') && child.abortRequestedSeq === null;
}

/** Re-adds the flow of running batches whose parent job Redis lost (see the top of the file). */
async function reconcileBatches(
  deps: Store & Jobs & Log,
  afterMs: number,
): Promise<ReconcileResult['batches']> {
  const out: ReconcileResult['batches'] = [];
  for (const batch of await listRunningBatches(deps.db, { olderThanMs: afterMs })) {
    try {
      const state = await deps.queues.batch.getJobState(jobIds.batch(batch.batchId));
      if (state !== 'unknown') continue;
      await continueTrace('reconcile batch', batch.traceparent, { 'loopline.batch.id': batch.batchId }, () =>
        addBatchFlow(deps.queues, batch),
      );
      out.push({ tenantId: batch.tenantId, batchId: batch.batchId, items: batch.items.length });
      deps.logger.warn(
        { tenantId: batch.tenantId, batchId: batch.batchId, items: batch.items.length },
        'reconciler re-added a lost batch flow',
      );
    } catch (err) {
      deps.logger.warn(
        { err, tenantId: batch.tenantId, batchId: batch.batchId },
        'reconciler could not check a batch',
      );
    }
  }
  return out;
}

/** The scheduler's processor. */
export async function processReconcile(deps: Resources, job: Job<ReconcileJob>): Promise<void> {
  let result: ReconcileResult;
  try {
    result = await reconcileOnce(deps, { afterMs: job.data.afterMs });
  } catch (err) {
    // PostgreSQL or Redis unavailable: the next period's run tries again (no failed job to retry).
    deps.logger.warn({ err, jobId: job.id }, 'reconciler pass failed');
    return;
  }
  if (result.candidates > 0 || result.batches.length > 0 || result.deliveries.length > 0)
    deps.logger.info(
      {
        jobId: job.id,
        candidates: result.candidates,
        locked: result.locked,
        pending: result.pending,
        moved: result.moved,
        woken: result.woken.length,
        batches: result.batches.length,
        deliveries: result.deliveries.length,
      },
      'reconciler pass',
    );
}

export interface Reconciler {
  /** Registers the scheduler when it is missing (what the periodic check and a reconnect call). */
  ensure(): Promise<void>;
  stop(): void;
}

/**
 * Registers the reconciler's job scheduler (one job per period across all workers) and again when
 * Redis is back or a periodic check finds it wiped; intervalMs 0 removes it.
 */
export async function startReconciler(
  deps: Jobs & Log & Pick<WorkerDeps, 'redis'>,
  opts: ReconcileOptions,
): Promise<Reconciler> {
  const queue = deps.queues.reconcile;
  if (opts.intervalMs <= 0) {
    await queue.removeJobScheduler(RECONCILE_SCHEDULER_ID).catch(() => undefined);
    return { ensure: async () => undefined, stop: () => undefined };
  }
  const data: ReconcileJob = { afterMs: opts.afterMs };
  const upsert = () =>
    queue.upsertJobScheduler(
      RECONCILE_SCHEDULER_ID,
      { every: opts.intervalMs },
      { name: 'reconcile', data, opts: { ...JOBS.reconcile.options } },
    );
  let busy = false;
  const ensure = async () => {
    if (busy) return;
    busy = true;
    try {
      const current = await queue.getJobScheduler(RECONCILE_SCHEDULER_ID);
      if (
        !current ||
        current.every !== opts.intervalMs ||
        (current.template?.data as ReconcileJob | undefined)?.afterMs !== opts.afterMs
      ) {
        await upsert();
        deps.logger.info(
          { intervalMs: opts.intervalMs, afterMs: opts.afterMs, missing: !current },
          'reconciler scheduled',
        );
      }
    } catch (err) {
      deps.logger.debug({ err }, 'reconciler scheduler check failed (Redis unavailable?)');
    } finally {
      busy = false;
    }
  };
  // Never fatal at start: with Redis down now, the 'ready' handler and the timer register it later.
  await ensure();
  const onReady = () => void ensure();
  deps.redis.on('ready', onReady);
  const timer = setInterval(() => void ensure(), opts.intervalMs);
  timer.unref();
  return {
    ensure,
    stop: () => {
      clearInterval(timer);
      deps.redis.off('ready', onReady);
    },
  };
}
