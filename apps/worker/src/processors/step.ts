import { compactionVerdict, decide, errorData } from '@loopline/core';
import { setSessionStatus } from '@loopline/db';
import { jobIds, PRIORITY, type StepJob } from '@loopline/queue';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import { isUserAbort } from '../abort-reason.ts';
import { cancelBackground } from '../compaction/background.ts';
import { endAbortedTurn } from '../control/abort.ts';
import { notifyParent } from '../control/notify.ts';
import { applySessionControl } from '../control/step-control.ts';
import { enterWait } from '../control/waits.ts';
import type { WorkerDeps } from '../deps.ts';
import { admitModelCall } from '../fairness/admission.ts';
import { sessionPriority } from '../fairness/options.ts';
import { workerJobIds } from '../job-ids.ts';
import { withSessionLease } from '../lease-runner.ts';
import { lastCompactionTokensAfter, loadContext, type SessionContext } from '../session-context.ts';
import { failSession, goIdle, setStatus } from '../session-status.ts';
import type { SessionWriter } from '../session-writer.ts';
import { type CallOutcome, callModel } from '../step/call-model.ts';
import { closeInterrupted } from '../step/recover.ts';
import {
  retryDelayMs,
  stepsThisTurn,
  trailingInterruptedSteps,
  trailingProviderErrors,
} from '../step/turn.ts';
import { enqueueCompact } from './prune.ts';
import { enqueueTitle } from './title.ts';

// The step job: one loop iteration of docs/context.md §6. Everything is re-derived from the log, so
// running it twice, or after a crash, continues the loop instead of repeating it. Context
// management is routed, never done here: a pending compaction goes to the compaction job, a
// needed one (pre-call estimate or provider rejection) to the prune job, which prunes first.

export async function processStep(deps: WorkerDeps, job: Job<StepJob>, token?: string): Promise<void> {
  await withSessionLease(deps, job, token, async ({ writer, signal, attempt, session: fenced, log }) => {
    const { tenantId, sessionId } = writer.ctx;
    let ctx = await loadContext(deps, tenantId, sessionId, fenced);
    if (!ctx) return;
    // Session control (control/): a recorded abort, answers of subagents, client-call timeouts.
    ctx = await applySessionControl(deps, writer, ctx, log);
    if (!ctx) return;
    if (await closeInterrupted(writer, ctx.history, Date.now())) {
      log.info('closed a step left unfinished by a previous runner');
      ctx = await loadContext(deps, tenantId, sessionId);
      if (!ctx) return;
    }
    const { session, view: messages, agent } = ctx;
    // A message woke the session: the background compaction of the idle period is obsolete.
    if (session.status === 'queued') {
      await cancelBackground(deps, sessionId, session.stepCount, log);
    }

    if (trailingProviderErrors(messages) >= deps.maxProviderRetries) {
      const last = [...messages].reverse().find((m) => m.info.role === 'assistant')?.info;
      const error = last?.role === 'assistant' ? last.error : undefined;
      await failSession(writer, error ?? errorData('APIError', 'the model provider kept failing'));
      return;
    }
    // Interrupted steps do not spend maxSteps (step/turn.ts); a step that kills its worker every
    // time is bounded here instead.
    const interrupted = trailingInterruptedSteps(messages);
    if (interrupted >= (deps.maxInterruptedSteps ?? 10)) {
      await failSession(writer, errorData('MaxInterruptionsReachedError', undefined, { interrupted }));
      return;
    }

    const input = {
      messages,
      agent,
      flags: deps.flags,
      stepsThisTurn: stepsThisTurn(messages),
      estimate: ctx.estimate,
      overhead: Math.round(ctx.shape.overheadTokens * (session.tokenRatio ?? 1)),
      // Only read when it can matter: the estimate is at the trigger.
      lastCompactionTokensAfter:
        ctx.estimate >= ctx.budget.trigger
          ? await lastCompactionTokensAfter(deps, tenantId, sessionId)
          : undefined,
    };
    const action = decide(input);
    log.debug({ action: action.type, estimate: ctx.estimate, trigger: ctx.budget.trigger }, 'step decision');

    // One info line per step outcome (no message content at info: counts, names, ids).
    if (action.type === 'fail') log.warn({ action: action.type, error: action.error.name }, stepLine.fail);
    else if (action.type !== 'call')
      log.info({ action: action.type, estimate: ctx.estimate }, stepLine[action.type]);
    switch (action.type) {
      case 'exit':
        if (session.status !== 'idle') await goIdle(deps, writer, session.stepCount);
        await notifyParent(deps, session, log); // a child session: wake its parent (every exit)
        await enqueueTitle(deps, session, log); // once per session: after its first turn
        return;
      case 'fail':
        await failSession(writer, action.error);
        return;
      case 'wait':
        await enterWait(deps, writer, ctx, action.calls, log);
        return;
      case 'run-compaction':
        await setStatus(writer, 'compacting');
        await enqueueCompact(deps, tenantId, sessionId, action.messageId, writer.ctx.fence);
        return;
      case 'create-compaction':
        await requestCompaction(deps, writer, session.stepCount, {
          overflow: action.overflow,
          iteration: action.iteration,
          streak: action.streak,
          rejected: false,
        });
        return;
      case 'call': {
        // Tenant fairness (fairness/admission.ts): a slot and token budget, or wait delayed.
        const admission = await admitModelCall(deps, job, token, writer, ctx, signal);
        if (!admission) return;
        let outcome: CallOutcome;
        const started = performance.now();
        try {
          outcome = await callModel(deps, writer, {
            session,
            history: messages,
            parentId: action.parentId,
            lastStep: action.lastStep,
            shape: ctx.shape,
            agent: ctx.agent,
            estimate: ctx.prompt,
            job: { id: job.id ?? 'unknown', attempt },
            signal,
            log,
          });
        } catch (err) {
          if (!isUserAbort(signal)) throw err;
          outcome = { type: 'lost' }; // aborted mid-tool: the turn is ended below
        }
        await admission.settle(outcome);
        const stepCount = session.stepCount + 1;
        logCall(log, outcome, {
          step: stepCount,
          model: agent.model,
          durationMs: performance.now() - started,
        });
        switch (outcome.type) {
          case 'lost':
            // POST …/abort cancelled this job: end the turn now, keeping what was streamed.
            if (isUserAbort(signal)) await endAbortedTurn(deps, writer, log);
            return;
          case 'continue':
            await next(deps, tenantId, sessionId, stepCount, 0, sessionPriority(session));
            return;
          case 'retry': {
            const n = trailingProviderErrors(messages) + 1;
            const delay = retryDelayMs(n, outcome.delayMs);
            // Say why the session does not move, in its status and as an event.
            const detail = retryDetail(outcome.cause, n, deps.maxProviderRetries, delay);
            await writer.write(async (trx, emit) => {
              await setSessionStatus(trx, tenantId, sessionId, 'running', detail, null);
              emit({ type: 'session.status', status: 'running', detail });
            });
            log.warn({ retry: n, of: deps.maxProviderRetries, delayMs: delay }, detail);
            await next(deps, tenantId, sessionId, stepCount, delay, sessionPriority(session));
            return;
          }
          case 'overflow':
            await providerOverflow(deps, writer, ctx, stepCount);
            return;
          case 'failed':
            await failSession(writer, outcome.error);
            return;
        }
      }
    }
  });
}

async function next(
  deps: WorkerDeps,
  tenantId: string,
  sessionId: string,
  stepCount: number,
  delay: number,
  priority: number = PRIORITY.interactive,
) {
  await deps.queues.add(
    'step',
    jobIds.step(sessionId, stepCount),
    { tenantId, sessionId, reason: 'continue' },
    { delay, priority },
  );
}

/**
 * The provider rejected the request as too long (the third overflow check): a compaction, bounded
 * by the same loop guard as the pre-call estimate (core compactionVerdict); with automatic
 * compaction off, a ContextOverflowError.
 */
async function providerOverflow(
  deps: WorkerDeps,
  writer: SessionWriter,
  ctx: SessionContext,
  stepCount: number,
) {
  const verdict = compactionVerdict({
    messages: ctx.view,
    compaction: ctx.agent.compaction,
    flags: deps.flags,
    rejected: true,
  });
  if (verdict.type === 'fail') {
    await failSession(writer, verdict.error);
    return;
  }
  await requestCompaction(deps, writer, stepCount, {
    overflow: verdict.overflow,
    iteration: verdict.iteration,
    streak: verdict.streak,
    rejected: true,
  });
}

/** Prune first (§3): the prune job creates the compaction only if pruning was not enough. */
async function requestCompaction(
  deps: WorkerDeps,
  writer: SessionWriter,
  stepCount: number,
  opts: { overflow: boolean; iteration: number; streak: number; rejected: boolean },
) {
  const { tenantId, sessionId, fence } = writer.ctx;
  await setStatus(writer, 'compacting');
  await deps.queues.add(
    'prune',
    workerJobIds.pruneForCompaction(sessionId, stepCount, fence),
    { tenantId, sessionId, purpose: 'compact', ...opts },
    { priority: PRIORITY.interactive },
  );
}

const stepLine = {
  exit: 'loop exited',
  fail: 'session failed',
  wait: 'waiting for client tools or subagents',
  'run-compaction': 'compaction pending: routed to the compaction job',
  'create-compaction': 'context at its trigger: prune, then compaction',
} as const;

/** The info line of a model call's step: outcome, finish, tokens, tool calls, duration. */
function logCall(
  log: Logger,
  outcome: CallOutcome,
  at: { step: number; model: string; durationMs: number },
): void {
  const base = { ...at, durationMs: Math.round(at.durationMs), outcome: outcome.type };
  if (outcome.type === 'continue') {
    const u = outcome.usage;
    log.info(
      {
        ...base,
        finish: outcome.finish,
        tools: outcome.tools ?? 0,
        ...(u ? { tokensIn: u.input + u.cache.read + u.cache.write, tokensOut: u.output + u.reasoning } : {}),
      },
      'step finished',
    );
  } else if (outcome.type === 'failed') log.warn({ ...base, error: outcome.error.name }, 'step failed');
  else log.info(base, outcome.type === 'lost' ? 'step stopped (aborted or lease lost)' : 'step finished');
}

/** `provider 429, retry 3/8 in 4 s` (no retry left: the next step ends the session). */
export function retryDetail(cause: string, n: number, max: number, delayMs: number): string {
  if (n >= max) return `provider ${cause}, no retries left (${n}/${max})`;
  return `provider ${cause}, retry ${n}/${max} in ${Math.max(1, Math.round(delayMs / 1000))} s`;
}
