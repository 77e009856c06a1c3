import { afterPrune, idlePruneObsolete } from '@loopline/core';
import { getSession } from '@loopline/db';
import { jobIds, PRIORITY, type PruneJob, wakeSession } from '@loopline/queue';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import { scheduleBackground } from '../compaction/background.ts';
import { appendCompactionMarker } from '../compaction/marker.ts';
import { prunePass } from '../compaction/prune-pass.ts';
import { endAbortedTurn } from '../control/abort.ts';
import type {
  Bus,
  CacheDeps,
  Flags,
  Hooks,
  Jobs,
  LeaseTimings,
  Metered,
  Resources,
  Tokens,
} from '../deps.ts';
import { withSessionLease } from '../lease-runner.ts';
import { loadContext, type SessionContext } from '../session-context.ts';
import { setStatus } from '../session-status.ts';
import type { SessionWriter } from '../session-writer.ts';

// The prune job (docs/context.md §3: cheapest defence first), under the session lease.
// - purpose `idle`: the loop went idle; prune, then schedule a background compaction when the
//   context is above the background threshold (docs/context.md §2).
// - purpose `compact`: the loop needs room; prune first, and only if that is not enough (or the
//   provider rejected the request) append the compaction marker and hand over to the compaction
//   job. When pruning alone brings the estimate under the trigger, the loop just continues
//   (core afterPrune decides which).
//   An abort recorded meanwhile (POST …/abort does not cancel a prune job: it makes no model call)
//   ends the turn here instead: no compaction point is set for a turn that was stopped.

/** The prune job (idle or compact purpose) under the session lease. */
export async function processPrune(
  deps: Resources & Tokens & Metered & Hooks & Flags & LeaseTimings & CacheDeps,
  job: Job<PruneJob>,
  token?: string,
): Promise<void> {
  await withSessionLease(deps, job, token, async ({ writer, attempt, ...lease }) => {
    const { tenantId, sessionId } = writer.ctx;
    const log = lease.log.child({ purpose: job.data.purpose });
    let ctx = await loadContext(deps, tenantId, sessionId);
    if (!ctx) return;
    if (job.data.purpose === 'idle' && idlePruneObsolete(ctx.session, job.data.stepCount)) {
      log.debug(
        { stepCount: ctx.session.stepCount, status: ctx.session.status },
        'session moved on; idle prune skipped',
      );
      return;
    }
    const pruned = await prunePass(
      deps,
      writer,
      ctx,
      { id: job.id ?? 'unknown', attempt },
      job.data.purpose === 'compact',
    );
    deps.metrics?.pruned(job.data.purpose, pruned.parts, pruned.tokens);
    if (pruned.parts > 0) {
      log.info(pruned, 'pruned old tool outputs');
      ctx = (await loadContext(deps, tenantId, sessionId)) ?? ctx;
    }
    if (job.data.purpose === 'idle') await scheduleBackground(deps, ctx, log);
    else await compactIfNeeded(deps, writer, ctx, job.data, log);
  });
}

async function compactIfNeeded(
  deps: Resources & Tokens & Metered & Hooks & Flags & CacheDeps,
  writer: SessionWriter,
  initial: SessionContext,
  data: PruneJob,
  log: Logger,
): Promise<void> {
  const { tenantId, sessionId, fence } = writer.ctx;
  let ctx = initial;
  const stepCount = ctx.session.stepCount;
  await deps.racepoint?.('prune:before-compaction');
  // Re-read: the abort may have landed during the pass. 'continue': a newer message starts a turn.
  if ((await getSession(deps.db, tenantId, sessionId))?.abortRequestedSeq != null) {
    const outcome = await endAbortedTurn(deps, writer, log);
    if (outcome === 'stopped') return;
    if (outcome === 'continue') ctx = (await loadContext(deps, tenantId, sessionId)) ?? ctx;
  }
  const action = afterPrune({
    messages: ctx.view,
    compaction: ctx.agent.compaction,
    flags: deps.flags,
    rejected: data.rejected,
    estimate: ctx.estimate,
    trigger: ctx.budget.trigger,
  });
  if (action.type === 'run-compaction') {
    await enqueueCompact(deps, tenantId, sessionId, action.messageId, fence);
    return;
  }
  if (action.type === 'continue') {
    // auto-off: the step decides again (and fails if nothing fits).
    if (action.why === 'enough-room') {
      log.info(
        { estimate: ctx.estimate, trigger: ctx.budget.trigger },
        'prune made enough room; no compaction',
      );
    }
    await setStatus(writer, 'queued');
    const args = { sessionId, stepCount, fence };
    await wakeSession(deps.queues, 'pruned', args, { tenantId, kind: ctx.session.kind });
    return;
  }
  const marker = await appendCompactionMarker(writer, ctx.session.agentName, {
    auto: true,
    overflow: data.overflow,
    ...(data.iteration !== undefined ? { iteration: data.iteration } : {}),
    ...(data.streak !== undefined ? { streak: data.streak } : {}),
  });
  log.info(
    {
      estimate: ctx.estimate,
      trigger: ctx.budget.trigger,
      rejected: data.rejected,
      messageId: marker.info.id,
    },
    'compaction needed',
  );
  await enqueueCompact(deps, tenantId, sessionId, marker.info.id, fence);
}

/**
 * States of a compaction job that will still run its compaction: waiting or delayed (it found the
 * session locked), or active (a worker that died leaves it active until BullMQ restarts it).
 */
const PENDING_STATES: ReadonlySet<string> = new Set(['waiting', 'prioritized', 'delayed', 'active']);

/** How long the pointer to a session's newest compaction job is kept (as BullMQ keeps the job). */
const COMPACT_POINTER_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Adds the compaction job of a compaction point, unless one for the same compaction is still
 * pending. Job ids are per enqueuer fence, so one that ended without a summary never blocks the
 * next; but a runner that finds the session compacting while the job is only stalled or waiting
 * for the lock (its worker frozen, killed, or starved past its leases) must not add a second one:
 * two jobs of one compaction take the session from each other, each run superseding the last, and
 * under load that kept a turn waiting for minutes (the soak of 2026-11-26). The newest job's id is
 * kept in Redis beside the session's lock; enqueuers hold the session lease, so they run one at a
 * time. Lost between the add and the pointer write, the pointer only costs one duplicate job, as
 * before.
 */
export async function enqueueCompact(
  deps: Jobs & Bus,
  tenantId: string,
  sessionId: string,
  messageId: string,
  fence: number,
): Promise<void> {
  const pointer = deps.keys.compactJob(sessionId);
  const newest = await deps.redis.get(pointer);
  if (newest?.startsWith(jobIds.compactOf(sessionId, messageId))) {
    const state = await deps.queues.compact.getJobState(newest);
    if (PENDING_STATES.has(state)) return;
  }
  const jobId = jobIds.compact(sessionId, messageId, fence);
  await deps.queues.add(
    'compact',
    jobId,
    { tenantId, sessionId, messageId },
    { priority: PRIORITY.interactive },
  );
  await deps.redis.set(pointer, jobId, 'PX', COMPACT_POINTER_TTL_MS);
}
