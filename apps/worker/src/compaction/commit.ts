import {
  type AssistantMessage,
  type CompactionPart,
  type CompactionRange,
  countCapped,
  derivedId,
  findBoundarySeq,
  newId,
  type Part,
  type SessionEvent,
  type TextPart,
  turnInProgress,
  type WithParts,
} from '@loopline/core';
import {
  appendUserMessage,
  finishCompaction,
  finishStep,
  insertPart,
  setSessionStatus,
  type Trx,
  updateMessageInfo,
  updatePart,
  updateSessionProgress,
} from '@loopline/db';
import { runStopped } from '../fairness/loop-stopped.ts';
import type { SessionContext } from '../session-context.ts';
import type { SessionWriter } from '../session-writer.ts';
import { releaseHeldInput } from './held-input.ts';
import type { LadderResult } from './ladder.ts';
import type { OpenedSummary } from './summary-message.ts';

// The end of a compaction, as ONE fenced transaction (docs/context.md §5.4, §5.5): the summary gets
// its finish (only now does it become a boundary), the compaction part its tailStartId, the
// session its new boundary pointer and counters, the compaction record its rung and sizes, and —
// for an automatic compaction — the continue message or the replayed request is appended. A
// retried job therefore either finds all of it or none of it. Events go out after the commit.

export type NextMove = 'step' | 'idle';

export interface CommitInput {
  ctx: SessionContext;
  range: CompactionRange;
  opened: OpenedSummary;
  result: LadderResult;
  model: string;
}

/** Commits a finished compaction in one fenced transaction; returns what the loop does next. */
export async function commitCompaction(writer: SessionWriter, input: CommitInput): Promise<NextMove> {
  const { ctx, range, opened, result } = input;
  const { tenantId, sessionId } = writer.ctx;
  const tokenizer = writer.deps.tokenizer;
  const now = Date.now();
  const { plan } = result;
  const part: CompactionPart = { ...range.part, tailStartId: plan.tailStartId };
  const summaryInfo: AssistantMessage = {
    ...opened.message,
    model: input.model,
    finish: 'stop',
    usage: result.usage,
    time: { ...opened.message.time, completed: now },
  };
  delete summaryInfo.error;
  // Input that arrived during the compaction keeps the loop going whatever the kind.
  let next: NextMove = plan.followUp !== undefined ? 'step' : 'idle';

  await writer.write(async (trx, emit) => {
    if (await releaseHeldInput(trx, tenantId, emit, range, turnInProgress(range.frozen))) next = 'step';
    if (!result.persisted) {
      const text: TextPart = {
        id: newId('prt'),
        sessionId,
        messageId: summaryInfo.id,
        type: 'text',
        text: result.text,
        synthetic: true,
        tokens: countCapped(tokenizer, result.text),
      };
      await insertPart(trx, tenantId, text);
      emit({ type: 'part.updated', part: text });
    }
    await updateMessageInfo(trx, tenantId, summaryInfo);
    await updatePart(trx, tenantId, part);
    if (plan.followUp !== undefined) await appendFollowUp(writer, trx, emit, input, plan.followUp);
    await updateSessionProgress(trx, tenantId, sessionId, {
      boundarySeq: boundaryAfter(ctx.history, range.marker, summaryInfo, part) ?? null,
      compactionCount: ctx.session.compactionCount + 1,
      lastCompactionAt: new Date(now),
      // The last report measured the prompt before the compaction: the next estimate must not anchor on it.
      lastUsage: null,
    });
    await finishCompaction(trx, tenantId, opened.compactionId, {
      status: 'completed',
      rung: result.rung,
      summaryMessageId: summaryInfo.id,
      tokensBefore: ctx.estimate,
      tokensAfter: result.tokensAfter,
      headMessages: plan.head.length,
      tailStartId: plan.tailStartId ?? null,
      model: input.model,
      requests: result.requests,
      error: result.error ?? null,
    });
    await finishStep(trx, tenantId, opened.ledgerId, { outcome: 'completed', usage: result.usage });
    const status = next === 'step' ? 'queued' : 'idle';
    await setSessionStatus(trx, tenantId, sessionId, status, null, null);
    emit({ type: 'message.updated', message: summaryInfo });
    emit({ type: 'part.updated', part });
    emit({
      type: 'session.compacted',
      compactionId: opened.compactionId,
      auto: range.part.auto,
      rung: result.rung,
      tokensBefore: ctx.estimate,
      tokensAfter: result.tokensAfter,
    });
    emit({ type: 'session.status', status });
    if (status === 'idle') emit({ type: 'session.idle' });
  });
  // Idle: the run ends here (a compaction with nothing to resume); free its slot, wake its batch item.
  if (next === 'idle') await runStopped(writer.deps, writer.ctx);
  return next;
}

/** The continue message, or the replayed request (docs/context.md §5.5); its id derives from the part. */
async function appendFollowUp(
  writer: SessionWriter,
  trx: Trx,
  emit: (e: SessionEvent) => void,
  input: CommitInput,
  text: string,
): Promise<void> {
  const { range, result } = input;
  const replay = result.plan.replay;
  const msg = await appendUserMessage(trx, {
    id: derivedId('msg', range.part.id, replay ? 'replay' : 'continue'),
    tenantId: writer.ctx.tenantId,
    sessionId: writer.ctx.sessionId,
    agent: input.ctx.session.agentName,
    synthetic: true,
    ...(replay?.info.role === 'user' && replay.info.system !== undefined
      ? { system: replay.info.system }
      : {}),
    parts: [{ type: 'text', text, synthetic: true, tokens: countCapped(writer.deps.tokenizer, text) }],
  });
  emit({ type: 'message.updated', message: msg.info });
  for (const p of msg.parts as Part[]) emit({ type: 'part.updated', part: p });
}

/** findBoundarySeq of the log as it is once this commit lands. */
function boundaryAfter(
  history: WithParts[],
  marker: WithParts,
  summary: AssistantMessage,
  part: CompactionPart,
): number | undefined {
  const log = history
    .filter((m) => m.info.id !== summary.id)
    .map((m) =>
      m.info.id === marker.info.id ? { ...m, parts: m.parts.map((p) => (p.id === part.id ? part : p)) } : m,
    );
  log.push({ info: summary, parts: [] });
  return findBoundarySeq(log);
}
