import {
  type CompactionPart,
  compactionRange,
  errorData,
  hasNewContent,
  isCompletedSummary,
  type ModelCapabilities,
  ratioState,
  type ServerFamily,
  turnAbortedAfter,
} from '@loopline/core';
import type { CompactionReason } from '@loopline/db';
import { agentLimits, capabilitiesFor, tokenizerFamily } from '@loopline/llm';
import { wakeSession } from '@loopline/queue';
import { sessionAttributes, withSpan } from '@loopline/telemetry';
import type { Logger } from 'pino';
import { isUserAbort } from '../abort-reason.ts';
import type { CacheDeps, Hooks, Jobs, Metered, Models, Store, Tokens } from '../deps.ts';
import { loadContext, type SessionContext, sessionRatio } from '../session-context.ts';
import type { SessionWriter } from '../session-writer.ts';
import { commitCompaction, type NextMove } from './commit.ts';
import { runLadder } from './ladder.ts';
import { commitNoop } from './noop.ts';
import type { SummaryModel } from './summarize.ts';
import { abandonSummary, openSummary, summaryMessageId } from './summary-message.ts';

// One run of a compaction point, under the caller's session lease: load the log, find the
// frozen range, open (or reopen) the one summary message, climb the ladder, commit, then wake
// the loop when there is something for it to do. A point that already has a completed summary
// only gets its follow-up step re-enqueued (the earlier run committed, then died).
//
// POST …/abort (control/abort.ts): the broadcast cancels this job's signal, which stops the
// summary's model call; the run is then closed without a summary (abandonSummary) and the caller
// ends the turn (`aborted`). A run that starts after an abort was recorded does not start at all,
// nor does one whose turn an abort already ended after its compaction point was set (the abort's
// step got the lock first, e.g. an abort during the prune pass before it): the point stays pending
// and the next message runs it, as after an abort during the summary.

export interface RunCompactionInput {
  markerId: string;
  signal: AbortSignal;
  job: { id: string; attempt: number };
  log: Logger;
}

/** Runs one compaction point under the caller's lease; `aborted` when an abort stopped it. */
export async function runCompaction(
  deps: Models & Store & Jobs & Tokens & Metered & Hooks & CacheDeps,
  writer: SessionWriter,
  input: RunCompactionInput,
): Promise<NextMove | 'aborted' | undefined> {
  const { tenantId, sessionId } = writer.ctx;
  const log = input.log.child({ compactionMessageId: input.markerId });
  const ctx = await loadContext(deps, tenantId, sessionId);
  if (!ctx) return undefined;
  if (ctx.session.abortRequestedSeq !== null) {
    log.info('abort requested before the compaction started; not compacting');
    return 'aborted';
  }
  if (turnAbortedAfter(ctx.history, input.markerId)) {
    log.info('the turn was aborted after its compaction point was set; not compacting');
    return undefined;
  }
  const range = compactionRange(ctx.history, input.markerId);
  if (!range) {
    // Reverted, or older than the boundary (already summarised by a later compaction): nothing to
    // summarise, but the session may still say `compacting`; the loop re-derives what to do.
    log.warn('compaction message not in the log since the boundary; waking the loop');
    await wake(deps, tenantId, sessionId, input.markerId, ctx.session.kind);
    return 'step';
  }
  const summaryId = summaryMessageId(range.part.id);
  const done = ctx.history.find((m) => m.info.id === summaryId);
  // A point already closed (a summary, or a recorded no-op, which is never pending again): this is
  // a late re-run of its job (BullMQ lost the completion), so only the follow-up is re-enqueued.
  if (range.part.noop === true || (done && isCompletedSummary(done))) {
    log.info('compaction already completed; re-enqueueing its follow-up');
    const next: NextMove = ctx.session.status === 'idle' ? 'idle' : 'step';
    if (next === 'step') await wake(deps, tenantId, sessionId, input.markerId, ctx.session.kind);
    return next;
  }

  const model = {
    ...summaryModel(ctx.agent, { tenantId: ctx.session.tenantId, agentName: ctx.session.agentName }),
    ratio: summaryRatio(ctx),
  };
  const job = input.job;
  if (!hasNewContent(range.frozen)) {
    const why = 'nothing new to summarise since the last summary';
    const next = await commitNoop(writer, {
      ctx,
      range,
      reason: reasonOf(range.part),
      model: model.ref,
      why,
      job,
    });
    log.info({ tokensBefore: ctx.estimate, next }, `compaction is a no-op: ${why}`);
    if (next === 'step') await wake(deps, tenantId, sessionId, input.markerId, ctx.session.kind);
    return next;
  }
  const opened = await openSummary(writer, {
    markerId: input.markerId,
    partId: range.part.id,
    model: model.ref,
    reason: reasonOf(range.part),
    tokensBefore: ctx.estimate,
    stepCount: ctx.session.stepCount,
    job,
  });
  const started = Date.now();
  let result: Awaited<ReturnType<typeof runLadder>>;
  try {
    // A span around the ladder (tracing on): the summary model calls are its children.
    result = await withSpan(
      'compaction',
      {
        attributes: {
          ...sessionAttributes(writer.ctx),
          'loopline.compaction.reason': reasonOf(range.part),
          'loopline.compaction.tokens_before': ctx.estimate,
          'loopline.compaction.model': model.ref,
        },
      },
      async (span) => {
        const done = await runLadder(deps, {
          ctx,
          range,
          model,
          summaryMessageId: summaryId,
          writer,
          signal: input.signal,
          log,
        });
        span.setAttributes({
          'loopline.compaction.rung': done.rung,
          'loopline.compaction.tokens_after': done.tokensAfter,
        });
        return done;
      },
    );
  } catch (err) {
    if (!isUserAbort(input.signal)) throw err;
    await abandonSummary(writer, opened, errorData('AbortedError', 'the session was aborted'));
    log.info({ durationMs: Date.now() - started }, 'compaction aborted');
    return 'aborted';
  }
  await deps.racepoint?.('compaction:before-commit');
  // Never applied when it would not shrink the context (a structural summary of a tiny head, a
  // tail that is already everything): recorded as a no-op instead, and the session goes on.
  if (result.tokensAfter >= ctx.estimate) {
    const why = `the best result (${result.rung}, ${result.tokensAfter} tokens) would not shrink the context (${ctx.estimate} tokens)`;
    const next = await commitNoop(writer, {
      ctx,
      range,
      reason: reasonOf(range.part),
      model: model.ref,
      why,
      opened,
      requests: result.requests,
      job,
    });
    log.info(
      { rung: result.rung, tokensBefore: ctx.estimate, tokensAfter: result.tokensAfter, next },
      'compaction is a no-op',
    );
    if (next === 'step') await wake(deps, tenantId, sessionId, input.markerId, ctx.session.kind);
    return next;
  }
  const next = await commitCompaction(writer, { ctx, range, opened, result, model: model.ref });
  deps.metrics?.compaction(result.rung, reasonOf(range.part), {
    seconds: (Date.now() - started) / 1000,
    tokensSaved: ctx.estimate - result.tokensAfter,
  });
  log.info(
    {
      rung: result.rung,
      tokensBefore: ctx.estimate,
      tokensAfter: result.tokensAfter,
      requests: result.requests,
      trigger: ctx.budget.trigger,
      durationMs: Date.now() - started,
      next,
    },
    'compaction completed',
  );
  if (next === 'step') await wake(deps, tenantId, sessionId, input.markerId, ctx.session.kind);
  return next;
}

/** compaction.model, else the agent's model (with the agent's limits only when it is the same model). */
export function summaryModel(
  agent: {
    model: string;
    baseURL?: string | undefined;
    limits: SummaryModel['limits'];
    compaction: { model?: string | undefined };
    server?: ServerFamily | undefined;
    capabilities?: ModelCapabilities | undefined;
  },
  owner: SummaryModel['owner'],
): SummaryModel {
  const ref = agent.compaction.model ?? agent.model;
  const same = ref === agent.model;
  const limits = same ? agent.limits : agentLimits({ model: ref, server: agent.server });
  const template = capabilitiesFor(same ? agent : { model: ref, server: agent.server });
  return { ref, baseURL: agent.baseURL, limits, template, owner };
}

/** The summary model's ratio with its margin: the session's own when it is the agent's model. */
function summaryRatio(ctx: SessionContext): number {
  const ref = ctx.agent.compaction.model ?? ctx.agent.model;
  const r =
    ref === ctx.agent.model
      ? sessionRatio(ctx.session, ctx.agent)
      : ratioState({ model: ref, tokenizer: tokenizerFamily({ model: ref }) });
  return r.ratio * (1 + r.margin);
}

function reasonOf(part: CompactionPart): CompactionReason {
  if (!part.auto) return 'manual';
  if (part.background) return 'background';
  return part.overflow ? 'overflow' : 'auto';
}

async function wake(deps: Jobs, tenantId: string, sessionId: string, markerId: string, kind: string) {
  await wakeSession(
    deps.queues,
    'compacted',
    { sessionId, compactionMessageId: markerId },
    { tenantId, kind },
  );
}
