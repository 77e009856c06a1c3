import {
  type AssistantMessage,
  type CompactionPart,
  type CompactionRange,
  derivedId,
  errorData,
  turnInProgress,
} from '@loopline/core';
import {
  type CompactionReason,
  finishCompaction,
  finishStep,
  setSessionStatus,
  startCompaction,
  updateMessageInfo,
  updatePart,
} from '@loopline/db';
import { runStopped } from '../fairness/loop-stopped.ts';
import type { SessionContext } from '../session-context.ts';
import type { SessionWriter } from '../session-writer.ts';
import type { NextMove } from './commit.ts';
import { releaseHeldInput } from './held-input.ts';
import { ignoreSummaryParts, type OpenedSummary } from './summary-message.ts';

// A compaction that cannot help is recorded and changes nothing (docs/context.md §5.6): nothing new to
// summarise (an empty session, a second POST …/compact with nothing since the last summary), or
// a best result that would not make the next prompt smaller. In one fenced transaction the
// compaction part is marked `noop` (never pending again, never a question to the model), the
// summary message — when the ladder had opened one — keeps no text and gets CompactionNoopError
// (no boundary), the compaction record ends `noop` with tokens after = before (so the growth
// guard holds the loop back), and the session goes back to what it was doing: the turn goes on
// (without a continue message: the history is unchanged), or it stays idle.

export interface NoopInput {
  ctx: SessionContext;
  range: CompactionRange;
  reason: CompactionReason;
  model: string;
  /** Why: for the record and the log. */
  why: string;
  /** The summary message and record when the ladder ran; undefined when decided before it. */
  opened?: OpenedSummary;
  requests?: number;
  job: { id: string; attempt: number };
}

/** Records a compaction that cannot help and changes nothing else. */
export async function commitNoop(writer: SessionWriter, input: NoopInput): Promise<NextMove> {
  const { ctx, range } = input;
  const { tenantId, sessionId, fence } = writer.ctx;
  const error = errorData('CompactionNoopError', input.why, {
    tokensBefore: ctx.estimate,
  });
  const turnWasRunning = turnInProgress(range.frozen);
  let next: NextMove = turnWasRunning ? 'step' : 'idle';
  if (input.opened) await ignoreSummaryParts(writer, input.opened.message.id);
  const part: CompactionPart = { ...range.part, noop: true };
  const compactionId = input.opened?.compactionId ?? derivedId('cmp', range.part.id, `f${fence}`);
  await writer.write(async (trx, emit) => {
    if (!input.opened) {
      await startCompaction(trx, {
        id: compactionId,
        tenantId,
        sessionId,
        messageId: range.marker.info.id,
        partId: range.part.id,
        reason: input.reason,
        model: input.model,
        tokensBefore: ctx.estimate,
        jobId: input.job.id,
        attempt: input.job.attempt,
      });
    } else {
      const info: AssistantMessage = {
        ...input.opened.message,
        error,
        time: { ...input.opened.message.time, completed: Date.now() },
      };
      delete info.finish;
      await updateMessageInfo(trx, tenantId, info);
      await finishStep(trx, tenantId, input.opened.ledgerId, { outcome: 'completed' });
      emit({ type: 'message.updated', message: info });
    }
    await finishCompaction(trx, tenantId, compactionId, {
      status: 'noop',
      tokensBefore: ctx.estimate,
      tokensAfter: ctx.estimate,
      requests: input.requests ?? 0,
      error,
    });
    await updatePart(trx, tenantId, part);
    if (await releaseHeldInput(trx, tenantId, emit, range, turnWasRunning)) next = 'step';
    const status = next === 'step' ? 'queued' : 'idle';
    await setSessionStatus(trx, tenantId, sessionId, status, null, null);
    emit({ type: 'part.updated', part });
    emit({ type: 'session.status', status });
    if (status === 'idle') emit({ type: 'session.idle' });
  });
  // Idle: the run ends here (a compaction with nothing to resume); free its slot, wake its batch item.
  if (next === 'idle') await runStopped(writer.deps, writer.ctx);
  return next;
}
