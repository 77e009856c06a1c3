import { resumableBackground } from '@loopline/core';
import type { BackgroundCompactJob } from '@loopline/queue';
import type { Job } from 'bullmq';
import { backgroundSkipReason } from '../compaction/background.ts';
import { appendCompactionMarker } from '../compaction/marker.ts';
import { runCompaction } from '../compaction/run.ts';
import { endAbortedTurn } from '../control/abort.ts';
import type { CacheDeps, Flags, Hooks, LeaseTimings, Metered, Models, Resources, Tokens } from '../deps.ts';
import { withSessionLease } from '../lease-runner.ts';
import { loadContext } from '../session-context.ts';

// The background compaction job: runs once the idle delay has passed, under the session lease.
// It compacts only a session that is still idle at the step count it was scheduled for and still
// above the threshold; the compaction itself (marker with `background: true`) appends nothing and
// leaves the session idle. A retry after a crash finishes the marker an earlier run wrote.

/** The background compaction job of an idle session. */
export async function processBackground(
  deps: Resources & Models & Tokens & Metered & Hooks & Flags & LeaseTimings & CacheDeps,
  job: Job<BackgroundCompactJob>,
  token?: string,
): Promise<void> {
  await withSessionLease(deps, job, token, async ({ writer, signal, attempt, log }) => {
    const { tenantId, sessionId } = writer.ctx;
    const ctx = await loadContext(deps, tenantId, sessionId);
    if (!ctx) return;
    let markerId = resumableBackground(ctx.view);
    if (!markerId) {
      if (ctx.session.stepCount !== job.data.stepCount) {
        log.info({ stepCount: ctx.session.stepCount }, 'background compaction skipped: a newer turn started');
        return;
      }
      const skip = await backgroundSkipReason(deps, ctx);
      if (skip) {
        log.info({ reason: skip }, 'background compaction skipped');
        return;
      }
      const marker = await appendCompactionMarker(writer, ctx.session.agentName, {
        auto: true,
        overflow: false,
        background: true,
      });
      markerId = marker.info.id;
    }
    const outcome = await runCompaction(deps, writer, {
      markerId,
      signal,
      job: { id: job.id ?? 'unknown', attempt },
      log,
    });
    // POST …/abort stopped it (the session showed `compacting`): end the turn as a step would.
    if (outcome === 'aborted') await endAbortedTurn(deps, writer, log);
  });
}
