import { type AssistantMessage, derivedId, type ErrorData, type Part } from '@loopline/core';
import {
  type CompactionReason,
  createAssistantMessage,
  finishCompaction,
  finishStep,
  getMessage,
  setSessionStatus,
  startCompaction,
  startStep,
  updateMessageInfo,
  updatePart,
} from '@loopline/db';
import type { SessionWriter } from '../session-writer.ts';

// The one summary message of a compaction point (docs/context.md §5.4). Its id derives from the
// compaction part, so every run of the job (a retry after a crash, a duplicate job) finds the
// same row: a run never adds a second summary, it replaces the unfinished content of an earlier
// run by marking those text parts `ignored` (kept in the log, never sent) and writing fresh ones.
// The message gets its `finish` only in the compaction's final commit, so until then it is no
// boundary and filterCompacted keeps it out of the model's view.

/** Agent name written on summary messages: the hidden compaction agent. */
export const COMPACTION_AGENT = 'compaction';

/** The summary message's id, derived from its compaction part so a retry reopens the same one. */
export function summaryMessageId(partId: string): string {
  return derivedId('msg', partId, 'summary');
}

export interface OpenSummaryInput {
  markerId: string;
  partId: string;
  model: string;
  reason: CompactionReason;
  tokensBefore: number;
  stepCount: number;
  job: { id: string; attempt: number };
}

export interface OpenedSummary {
  message: AssistantMessage;
  /** The compactions row of this run (its id is the `compactionId` of `session.compacted`). */
  compactionId: string;
  /** The step-ledger row of this run. */
  ledgerId: string;
}

/**
 * Creates (or finds) the summary message, opens this run's compaction record and ledger row, and
 * sets the session `compacting`; then retires the text of any earlier, unfinished run.
 */
export async function openSummary(writer: SessionWriter, input: OpenSummaryInput): Promise<OpenedSummary> {
  const { tenantId, sessionId, fence } = writer.ctx;
  const id = summaryMessageId(input.partId);
  // One record and ledger row per runner: a later runner closes the earlier, still running record.
  const compactionId = derivedId('cmp', input.partId, `f${fence}`);
  const ledgerId = derivedId('stp', input.partId, `f${fence}`);
  const message = await writer.write(async (trx, emit) => {
    const msg = await createAssistantMessage(trx, {
      tenantId,
      sessionId,
      id,
      parentId: input.markerId,
      model: input.model,
      agent: COMPACTION_AGENT,
      summary: true,
    });
    await startCompaction(trx, {
      id: compactionId,
      tenantId,
      sessionId,
      messageId: input.markerId,
      partId: input.partId,
      reason: input.reason,
      model: input.model,
      tokensBefore: input.tokensBefore,
      jobId: input.job.id,
      attempt: input.job.attempt,
    });
    await startStep(trx, {
      id: ledgerId,
      tenantId,
      sessionId,
      step: input.stepCount,
      kind: 'compaction',
      jobId: input.job.id,
      attempt: input.job.attempt,
      fence,
      messageId: id,
    });
    await setSessionStatus(trx, tenantId, sessionId, 'compacting', null, null);
    emit({ type: 'message.updated', message: msg });
    emit({ type: 'session.status', status: 'compacting' });
    return msg;
  });
  await ignoreSummaryParts(writer, id);
  return { message, compactionId, ledgerId };
}

/**
 * Retires text parts of the summary message (all live ones, or `only`): ignored, 0 tokens, no text,
 * so a failed attempt or an unused rung leaves an empty marker and never reaches the model.
 */
export async function ignoreSummaryParts(
  writer: SessionWriter,
  messageId: string,
  only?: readonly string[],
): Promise<number> {
  if (only && only.length === 0) return 0;
  const { tenantId, sessionId } = writer.ctx;
  const msg = await getMessage(writer.deps.db, tenantId, sessionId, messageId);
  if (!msg) return 0;
  const wanted = only ? new Set(only) : undefined;
  // Summaries record text only (summarize.ts drops reasoning), so text parts are all there is.
  const updated: Part[] = [];
  for (const p of msg.parts) {
    if (p.type !== 'text' || p.ignored || (wanted && !wanted.has(p.id))) continue;
    updated.push({ ...p, text: '', ignored: true, tokens: 0 });
  }
  if (updated.length === 0) return 0;
  await writer.write(async (trx, emit) => {
    for (const p of updated) {
      await updatePart(trx, tenantId, p);
      emit({ type: 'part.updated', part: p });
    }
  });
  return updated.length;
}

/**
 * Closes a run an abort stopped: the summary gets `error` (no boundary) and its text is ignored,
 * the record ends `failed`, the ledger row `aborted`; the point stays pending for the next run.
 */
export async function abandonSummary(
  writer: SessionWriter,
  opened: OpenedSummary,
  error: ErrorData,
): Promise<void> {
  const { tenantId } = writer.ctx;
  await ignoreSummaryParts(writer, opened.message.id);
  const now = Date.now();
  const info: AssistantMessage = {
    ...opened.message,
    error,
    time: { ...opened.message.time, completed: now },
  };
  delete info.finish;
  await writer.write(async (trx, emit) => {
    await updateMessageInfo(trx, tenantId, info);
    await finishCompaction(trx, tenantId, opened.compactionId, { status: 'failed', error });
    await finishStep(trx, tenantId, opened.ledgerId, { outcome: 'aborted', error });
    emit({ type: 'message.updated', message: info });
  });
}
