import { acquireFenceWithSession, type SessionInfo, StaleFenceError } from '@loopline/db';
import { acquireLease, wakeSession } from '@loopline/queue';
import { DelayedError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { cancellationSignalOf } from './control/abort.ts';
import type {
  CacheDeps,
  Hooks,
  Jobs,
  LeaseTimings,
  Log,
  Metered,
  Resources,
  Tokens,
  WorkerDeps,
} from './deps.ts';
import type { PrefetchedChanges } from './session-cache.ts';
import { sessionCacheOf } from './session-context.ts';
import { SessionWriter } from './session-writer.ts';
import { stepFencesOf } from './step/fence-batch.ts';

// What every session job does around its work: the session lock (else the job is delayed, never
// failed), a fencing token and a fenced writer (docs/durability.md §2, §3). A StaleFenceError or a
// lost lock means a newer runner owns the session: this job stops quietly.

export interface LeasedContext {
  writer: SessionWriter;
  signal: AbortSignal;
  attempt: number;
  /** The session row as acquiring the fence left it (no getSession needed right after). */
  session: SessionInfo;
  /**
   * With `prefetch`: the log read by the fence statement (the changes since the cached revision,
   * or the whole log when this worker has none cached).
   */
  changes?: PrefetchedChanges;
  /**
   * The work's last move: releases the session lock while `add` adds the session's next job, in
   * one round trip instead of two (the release is sent first). Nothing may be written after it.
   */
  handOff(add: () => Promise<void>): Promise<void>;
  /**
   * The job's logger: every line carries tenantId, sessionId, jobId, queue, attempt and fence, so
   * one `jq 'select(.sessionId == …)'` follows a session through every runner.
   */
  log: Logger;
}

/** The bindings of a session job's log lines (before a fence is known: without it). */
export function jobLogBindings(
  job: Job<{ tenantId: string; sessionId: string }>,
  fence?: number,
): Record<string, unknown> {
  const { tenantId, sessionId } = job.data;
  return {
    tenantId,
    sessionId,
    jobId: job.id,
    queue: job.queueName,
    attempt: job.attemptsMade + 1,
    ...(fence !== undefined ? { fence } : {}),
  };
}

/** How a session job takes its lease (the step job prefetches its log's changes). */
export interface LeaseOptions {
  /**
   * Read the session's log in the fence statement (db acquireStepFences): the changes of its cached
   * log, or the whole log when none is cached here.
   * One round trip instead of two, for a job that loads the context next.
   */
  prefetch?: boolean;
}

/** Runs a session job's work under the session lock and a fresh fence (or delays the job). */
export async function withSessionLease<T>(
  deps: Resources & Tokens & Metered & Hooks & LeaseTimings & CacheDeps,
  job: Job<{ tenantId: string; sessionId: string }>,
  token: string | undefined,
  work: (ctx: LeasedContext) => Promise<T>,
  opts: LeaseOptions = {},
): Promise<T | undefined> {
  const { tenantId, sessionId } = job.data;
  const lease = await acquireLease(deps.redis, deps.keys.lock(sessionId), { ttlMs: deps.lockTtlMs });
  if (!lease) {
    deps.metrics?.lockWait(job.queueName);
    const jitter = Math.floor(Math.random() * deps.lockRetryMs);
    await job.moveToDelayed(Date.now() + deps.lockRetryMs + jitter, token);
    throw new DelayedError();
  }
  let fenced: number | undefined;
  try {
    const { fence, session, changes } = await takeFence(deps, tenantId, sessionId, opts);
    fenced = fence;
    const log = deps.logger.child(jobLogBindings(job, fence));
    const writer = new SessionWriter(deps, { tenantId, sessionId, fence });
    // A step job's own cancellation signal (BullMQ's, aborted by an abort broadcast: control/abort.ts)
    // is combined with the lease's: either stops the model stream and the tools.
    const jobSignal = cancellationSignalOf(job);
    const signal = jobSignal ? AbortSignal.any([lease.signal, jobSignal]) : lease.signal;
    const result = await work({
      writer,
      signal,
      attempt: job.attemptsMade + 1,
      session,
      log,
      ...(changes ? { changes } : {}),
      async handOff(add) {
        await Promise.all([lease.release(), add()]);
      },
    });
    // The work stopped because the lease was lost (e.g. this worker froze past its TTL): make
    // sure the session is woken again in case the runner that took over dies too.
    if (lease.lost) await resumeLater(deps, tenantId, sessionId);
    return result;
  } catch (err) {
    if (err instanceof StaleFenceError || lease.lost) {
      deps.metrics?.superseded(job, err instanceof StaleFenceError ? 'stale_fence' : 'lock_lost');
      deps.logger.warn(
        { ...jobLogBindings(job, fenced), err: (err as Error).message },
        'superseded by a newer runner',
      );
      // The runner that superseded us may die too (docs/durability.md §3): a resume job one lock
      // TTL out wakes the session then, and does nothing while a runner is live.
      await resumeLater(deps, tenantId, sessionId);
      return undefined;
    }
    throw err;
  } finally {
    await lease.release();
  }
}

/** The fencing token and the session row, with the cached log's changes when asked and possible. */
async function takeFence(
  deps: Resources & Metered & CacheDeps,
  tenantId: string,
  sessionId: string,
  opts: LeaseOptions,
): Promise<{ fence: number; session: SessionInfo; changes?: PrefetchedChanges }> {
  const cache = opts.prefetch ? sessionCacheOf(deps) : undefined;
  if (cache) {
    // Through the worker's group commit (step/fence-batch.ts): alone at once, else with the others.
    // With the cached log's revision the changes since it come back; with none cached here (the
    // session's first job on this worker) the whole log. Null: another transaction held the row
    // (the statement never waits), or it changed after the statement's snapshot; the plain fence
    // below, then the log read on its own, is the safe way.
    const since = cache.revOf(tenantId, sessionId);
    const taken = await stepFencesOf(deps).submit({ tenantId, sessionId, rev: since });
    if (taken && 'changes' in taken && since !== undefined) {
      const { fence, session, changes } = taken;
      return { fence, session, changes: { since, changes } };
    }
    if (taken && !('changes' in taken)) {
      const { fence, session, snapshot } = taken;
      return snapshot
        ? { fence, session, changes: { fromSeq: session.boundarySeq, snapshot } }
        : { fence, session };
    }
  }
  return acquireFenceWithSession(deps.db, tenantId, sessionId);
}

async function resumeLater(
  deps: Jobs & Log & Pick<WorkerDeps, 'lockTtlMs'>,
  tenantId: string,
  sessionId: string,
): Promise<void> {
  await wakeSession(
    deps.queues,
    'resume',
    { sessionId, at: Date.now() },
    { tenantId, delayMs: deps.lockTtlMs },
  ).catch((err) => deps.logger.warn({ err, tenantId, sessionId }, 'could not schedule a resume job'));
}
