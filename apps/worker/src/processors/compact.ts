import { compactionRestartsExceeded, DEFAULT_MAX_INTERRUPTED_STEPS, errorData } from '@loopline/core';
import { closeInterruptedRuns, StaleFenceError } from '@loopline/db';
import type { CompactJob } from '@loopline/queue';
import type { Job } from 'bullmq';
import { runCompaction } from '../compaction/run.ts';
import { endAbortedTurn } from '../control/abort.ts';
import type {
  CacheDeps,
  Hooks,
  LeaseTimings,
  Metered,
  Models,
  Resources,
  Tokens,
  TurnLimits,
} from '../deps.ts';
import { withSessionLease } from '../lease-runner.ts';
import { failSession } from '../session-status.ts';

// The compaction job (docs/context.md §5): one compaction point, under the session lease. The work is
// compaction/run.ts; this shell adds the last-attempt rule: when BullMQ will not retry again, the
// session ends with a typed CompactionError instead of staying `compacting` forever; the
// interruption rule: a job restarted as stalled LOOPLINE_MAX_INTERRUPTED_STEPS times ends the
// turn with a MaxInterruptionsReachedError (the step loop's crash-loop cap, for compactions); and the
// abort rule: POST …/abort stops the summary's model call (run.ts), then this job ends the turn
// itself, under its own fence, like a step would (the session goes idle; the job completes).

/** The compaction job: one compaction point under the session lease. */
export async function processCompact(
  deps: Resources & Models & Tokens & Metered & Hooks & LeaseTimings & CacheDeps & Partial<TurnLimits>,
  job: Job<CompactJob>,
  token?: string,
): Promise<void> {
  await withSessionLease(deps, job, token, async ({ writer, signal, attempt, log }) => {
    // Each run of this job that a dead or frozen worker left was restarted as a stalled job. A
    // compaction that takes its worker down every time would otherwise come back until BullMQ's
    // stall cap (1,000): at the turn's interruption cap (core) it ends the turn instead.
    const exceeded = compactionRestartsExceeded(job.stalledCounter ?? 0, {
      maxInterruptedSteps: deps.maxInterruptedSteps ?? DEFAULT_MAX_INTERRUPTED_STEPS,
    });
    if (exceeded) {
      log.error({ interrupted: job.stalledCounter }, 'compaction interrupted too many times; the turn fails');
      await writer.write((trx) =>
        closeInterruptedRuns(trx, writer.ctx.tenantId, job.data.messageId, { why: exceeded.message }),
      );
      await failSession(writer, exceeded);
      return;
    }
    try {
      const outcome = await runCompaction(deps, writer, {
        markerId: job.data.messageId,
        signal,
        job: { id: job.id ?? 'unknown', attempt },
        log,
      });
      if (outcome === 'aborted') await endAbortedTurn(deps, writer, log);
    } catch (err) {
      if (signal.aborted || err instanceof StaleFenceError) throw err;
      if (attempt >= (job.opts.attempts ?? 1)) {
        log.error({ err }, 'compaction failed on its last attempt');
        await failSession(writer, errorData('CompactionError', (err as Error).message));
      }
      throw err;
    }
  });
}
