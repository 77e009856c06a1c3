import { errorData } from '@loopline/core';
import { batchItemResult, finishBatchItem, getBatchItemBySession, getSession } from '@loopline/db';
import type { BatchItemJob } from '@loopline/queue';
import { DelayedError, type Job } from 'bullmq';
import { batchMessageId, postBatchMessage, wakeBatchSession } from '../batch/post-message.ts';
import type { FairnessDeps, Resources, Tokens } from '../deps.ts';
import { fairnessOf, jittered } from '../fairness/options.ts';

// A batch item (one conversation), the child job of its batch's flow. Each run re-derives what to
// do from PostgreSQL, so a retry or a duplicate run is harmless:
//   item finished or cancelled            → done (the job completes)
//   session idle, messages left           → post the next one, then wait
//   session idle, all posted and answered → record the result, item completed
//   session error                         → record what there is, item failed
//   session queued, running, compacting, waiting (for a subagent, or client tool results, which
//   time out)                             → wait
// Waiting never holds a worker: the job is moved back to delayed (DelayedError) and promoted early
// when the session's run stops (fairness/loop-stopped.ts); its poll interval only covers a
// missed wake-up.

const STOPPED = new Set(['idle', 'error']);

/** One run of a batch item: post, wait or finish, re-derived from PostgreSQL. */
export async function processBatchItem(
  deps: Resources & Tokens & FairnessDeps,
  job: Job<BatchItemJob>,
  token?: string,
): Promise<void> {
  const { tenantId, sessionId } = job.data;
  const log = deps.logger.child({ tenantId, sessionId, batchId: job.data.batchId, jobId: job.id });
  const item = await getBatchItemBySession(deps.db, tenantId, sessionId);
  if (item?.status !== 'active') return;
  const session = await getSession(deps.db, tenantId, sessionId);
  if (!session) return;

  switch (session.status) {
    case 'idle':
      if (item.sent < item.messages.length) {
        await postBatchMessage(deps, item, session);
        break;
      }
      await finishBatchItem(deps.db, item.batchId, item.index, {
        status: 'completed',
        result: await batchItemResult(deps.db, tenantId, sessionId),
      });
      log.debug('batch item completed');
      return;
    case 'error':
      await finishBatchItem(deps.db, item.batchId, item.index, {
        status: 'failed',
        result: await batchItemResult(deps.db, tenantId, sessionId),
        error: session.error ?? errorData('BatchItemError', session.statusDetail ?? 'the session failed'),
      });
      log.info({ error: session.error?.name }, 'batch item failed');
      return;
    case 'queued':
      // Repairs a wake job lost between the post's commit and its enqueue (a no-op otherwise).
      if (item.sent > 0)
        await wakeBatchSession(deps, tenantId, sessionId, batchMessageId(sessionId, item.sent - 1));
      break;
    default:
      break;
  }

  await job.moveToDelayed(Date.now() + jittered(fairnessOf(deps).batchPollMs), token);
  // The session may have stopped between the read above and the delay, and its wake-up found the
  // job still active: look once more, and come back at once if so.
  const now = await getSession(deps.db, tenantId, sessionId);
  if (now && STOPPED.has(now.status)) await job.promote().catch(() => undefined);
  throw new DelayedError();
}
