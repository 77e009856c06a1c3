import { afterCall, DEFAULT_MAX_INTERRUPTED_STEPS, decide, type LoopAction } from '@loopline/core';
import { setSessionStatus } from '@loopline/db';
import { jobIds, PRIORITY, type StepJob, wakeSession } from '@loopline/queue';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import { isUserAbort } from '../abort-reason.ts';
import { cancelBackground } from '../compaction/background.ts';
import { endAbortedTurn } from '../control/abort.ts';
import { notifyParent } from '../control/notify.ts';
import { applySessionControl } from '../control/step-control.ts';
import { enterWait } from '../control/waits.ts';
import type { Jobs, WorkerDeps } from '../deps.ts';
import { admitModelCall } from '../fairness/admission.ts';
import { withSessionLease } from '../lease-runner.ts';
import { lastCompactionTokensAfter, loadContext } from '../session-context.ts';
import { failSession, goIdle, setStatus } from '../session-status.ts';
import type { SessionWriter } from '../session-writer.ts';
import { type CallOutcome, callModel } from '../step/call-model.ts';
import { closeInterrupted } from '../step/recover.ts';
import { enqueueCompact } from './prune.ts';
import { enqueueTitle } from './title.ts';

// The step job: one loop iteration of docs/context.md §6. Everything is re-derived from the log, so
// running it twice, or after a crash, continues the loop instead of repeating it. Every decision
// is core's (decide before the call, afterCall after it, fault budgets included); this file only
// performs them. Context management is routed, never done here: a pending compaction goes to the
// compaction job, a needed one (pre-call estimate or provider rejection) to the prune job, which
// prunes first.

export async function processStep(deps: WorkerDeps, job: Job<StepJob>, token?: string): Promise<void> {
  await withSessionLease(
    deps,
    job,
    token,
    async ({ writer, signal, attempt, session: fenced, changes, log, handOff }) => {
      const { tenantId, sessionId } = writer.ctx;
      let ctx = await loadContext(deps, tenantId, sessionId, fenced, changes);
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

      const input = {
        messages,
        agent,
        flags: deps.flags,
        // Interrupted steps and provider retries do not spend maxSteps (core step-budget.ts); these
        // caps end a turn whose faults repeat.
        budgets: {
          maxProviderRetries: deps.maxProviderRetries,
          maxInterruptedSteps: deps.maxInterruptedSteps ?? DEFAULT_MAX_INTERRUPTED_STEPS,
        },
        estimate: ctx.estimate,
        overhead: Math.round(ctx.shape.overheadTokens * (session.tokenRatio ?? 1)),
        // Only read when it can matter: the estimate is at the trigger.
        lastCompactionTokensAfter:
          ctx.estimate >= ctx.budget.trigger
            ? await lastCompactionTokensAfter(deps, tenantId, sessionId)
            : undefined,
      };
      const action = decide(input);
      log.debug(
        { action: action.type, estimate: ctx.estimate, trigger: ctx.budget.trigger },
        'step decision',
      );

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
        case 'create-compaction':
          await needsRoomOrFails(deps, writer, session.stepCount, action);
          return;
        case 'wait':
          await enterWait(deps, writer, ctx, action.calls, log);
          return;
        case 'run-compaction':
          await setStatus(writer, 'compacting');
          await enqueueCompact(deps, tenantId, sessionId, action.messageId, writer.ctx.fence);
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
          const after = afterCall({
            result: outcome,
            userAborted: isUserAbort(signal),
            messages,
            agent,
            flags: deps.flags,
            maxProviderRetries: deps.maxProviderRetries,
          });
          switch (after.type) {
            case 'stop':
              return;
            case 'end-aborted-turn':
              // POST …/abort cancelled this job: end the turn now, keeping what was streamed.
              await endAbortedTurn(deps, writer, log);
              return;
            case 'next':
              // The lock goes back as the next step is added (one round trip); nothing written after.
              await handOff(() => next(deps, writer, session, stepCount, 0));
              return;
            case 'retry': {
              // Say why the session does not move, in its status and as an event.
              const { detail } = after;
              await writer.write(async (trx, emit) => {
                await setSessionStatus(trx, tenantId, sessionId, 'running', detail, null);
                emit({ type: 'session.status', status: 'running', detail });
              });
              log.warn({ retry: after.attempt, of: after.of, delayMs: after.delayMs }, detail);
              await next(deps, writer, session, stepCount, after.delayMs);
              return;
            }
            default:
              // The provider rejected the request as too long, or the call failed for good.
              await needsRoomOrFails(deps, writer, stepCount, after);
              return;
          }
        }
      }
    },
    { prefetch: true },
  );
}

/** The next step of the loop, keyed by the step count this step reached. */
async function next(
  deps: Jobs,
  writer: SessionWriter,
  session: { kind: string },
  stepCount: number,
  delayMs: number,
) {
  const { tenantId, sessionId } = writer.ctx;
  await wakeSession(
    deps.queues,
    'continue',
    { sessionId, stepCount },
    { tenantId, kind: session.kind, delayMs },
  );
}

/**
 * A `fail` ends the turn; a `create-compaction` (the pre-call estimate at the trigger, or the
 * provider rejecting the request) goes to the prune job, which compacts only if pruning is not
 * enough.
 */
async function needsRoomOrFails(
  deps: Jobs,
  writer: SessionWriter,
  stepCount: number,
  action: Extract<LoopAction, { type: 'fail' | 'create-compaction' }>,
) {
  if (action.type === 'fail') {
    await failSession(writer, action.error);
    return;
  }
  await requestCompaction(deps, writer, stepCount, {
    overflow: action.overflow,
    iteration: action.iteration,
    streak: action.streak,
    rejected: action.rejected === true,
  });
}

/** Prune first (§3): the prune job creates the compaction only if pruning was not enough. */
async function requestCompaction(
  deps: Jobs,
  writer: SessionWriter,
  stepCount: number,
  opts: { overflow: boolean; iteration: number; streak: number; rejected: boolean },
) {
  const { tenantId, sessionId, fence } = writer.ctx;
  await setStatus(writer, 'compacting');
  await deps.queues.add(
    'prune',
    jobIds.pruneForCompaction(sessionId, stepCount, fence),
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
