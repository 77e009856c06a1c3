import { backgroundSkipReason as skipReason } from '@loopline/core';
import { jobIds, PRIORITY } from '@loopline/queue';
import type { Logger } from 'pino';
import type { Flags, Jobs, Store } from '../deps.ts';
import { lastCompactionTokensAfter, type SessionContext } from '../session-context.ts';

// Background compaction (docs/context.md §2, the background threshold): an idle session whose next
// prompt is above `background` (trigger × backgroundRatio) is compacted after an idle delay, so
// its next turn starts with room to spare. The job id carries the session's step count: a turn
// that starts first changes the count, and the job, when it runs, finds it and does nothing.

/**
 * Why an idle session gets no background compaction now (core backgroundSkipReason); undefined
 * when it should get one. The last compaction is read only when the threshold is reached.
 */
export async function backgroundSkipReason(
  deps: Store & Flags,
  ctx: SessionContext,
): Promise<string | undefined> {
  return skipReason({
    status: ctx.session.status,
    messages: ctx.view,
    compaction: ctx.agent.compaction,
    flags: deps.flags,
    estimate: ctx.estimate,
    budget: ctx.budget,
    lastCompactionTokensAfter:
      ctx.estimate >= ctx.budget.background
        ? await lastCompactionTokensAfter(deps, ctx.session.tenantId, ctx.session.id)
        : undefined,
  });
}

/** Called after the idle prune pass. */
export async function scheduleBackground(
  deps: Store & Jobs & Flags,
  ctx: SessionContext,
  log: Logger,
): Promise<void> {
  const skip = await backgroundSkipReason(deps, ctx);
  if (skip) {
    log.debug({ reason: skip, estimate: ctx.estimate }, 'no background compaction');
    return;
  }
  const { session } = ctx;
  const delay = ctx.agent.compaction.backgroundDelayMs;
  await deps.queues.add(
    'background',
    jobIds.background(session.id, session.stepCount),
    { tenantId: session.tenantId, sessionId: session.id, stepCount: session.stepCount },
    { delay, priority: PRIORITY.background },
  );
  log.info(
    { estimate: ctx.estimate, background: ctx.budget.background, delayMs: delay },
    'background compaction scheduled',
  );
}

/** A turn is starting: the delayed background job of the idle period before it is obsolete. */
export async function cancelBackground(
  deps: Jobs,
  sessionId: string,
  stepCount: number,
  log: Logger,
): Promise<void> {
  try {
    await deps.queues.background.remove(jobIds.background(sessionId, stepCount));
  } catch (err) {
    // Already running (locked): it finds the new turn by itself and does nothing.
    log.debug({ err }, 'background compaction not removed');
  }
}
