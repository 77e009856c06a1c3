import type { Usage } from '@loopline/core';
import {
  BATCH_CANCELLED_DETAIL,
  getSession,
  getTenantLimitsCached,
  isBatchItemCancelled,
  setSessionStatus,
} from '@loopline/db';
import { acquireSlot, renewSlot, reserveTokens, settleTokens, type TokenReservation } from '@loopline/queue';
import { DelayedError, type Job } from 'bullmq';
import type { FairnessDeps, Resources } from '../deps.ts';
import type { SessionContext } from '../session-context.ts';
import type { SessionWriter } from '../session-writer.ts';
import type { CallOutcome } from '../step/call-model.ts';
import { heldSlotsOf } from './held-slots.ts';
import { runStopped } from './loop-stopped.ts';
import { fairnessOf, jittered, sessionPriority, UNLIMITED } from './options.ts';
import { releaseTenantSlot } from './slots.ts';

// Admission of a model call (the step's `call` action), in this order:
// 1. a batch session whose item was cancelled stops here: idle, "cancelled with its batch";
// 2. the tenant's token budget: the estimate of the prompt is reserved in the current window, or
//    the step waits for the next window (status queued, "token budget exhausted, resumes at …")
//    and gives its tenant slot back meanwhile;
// 3. a tenant slot (the semaphore): taken or refreshed, then renewed while the step runs; when all
//    are taken the step waits (status queued, "waiting for a tenant slot (3/3 running)") as a
//    waiter that a release wakes, or its retry timer. The next step of the same runner chain, within
//    half the slot's TTL, runs on the slot without asking Redis again (held-slots.ts).
// Waiting is `job.moveToDelayed` + DelayedError, as for a busy session lock: the job is never
// failed and no worker is held. After the call, `settle` corrects the reservation to the usage.

export interface Admission {
  settle(outcome: CallOutcome): Promise<void>;
}

/** Admits a model call past the batch, token budget and tenant slot checks, or delays the step. */
export async function admitModelCall(
  deps: Resources & FairnessDeps,
  job: Job,
  token: string | undefined,
  writer: SessionWriter,
  ctx: SessionContext,
  signal: AbortSignal,
): Promise<Admission | undefined> {
  const { tenantId, sessionId } = writer.ctx;
  const { session } = ctx;
  const opts = fairnessOf(deps);

  if (session.kind === 'batch' && (await isBatchItemCancelled(deps.db, tenantId, sessionId))) {
    await writer.write(async (trx, emit) => {
      // The gateway's cancel stopped it already (and told of it): no second session.idle.
      if ((await getSession(trx, tenantId, sessionId))?.status === 'idle') return;
      await setSessionStatus(trx, tenantId, sessionId, 'idle', BATCH_CANCELLED_DETAIL, null);
      emit({ type: 'session.status', status: 'idle', detail: BATCH_CANCELLED_DETAIL });
      emit({ type: 'session.idle' });
    });
    await runStopped(deps, writer.ctx);
    return undefined;
  }

  // Cached per process for TENANT_LIMITS_TTL_MS (1 s; a change through this process at once).
  const limits = await getTenantLimitsCached(deps.db, tenantId);
  const budget = limits.tokensPerMinute ?? opts.tokensPerMinute;
  let reservation: TokenReservation | undefined;
  if (budget > 0) {
    const answer = await reserveTokens(deps.redis, deps.keys, {
      tenantId,
      tokens: ctx.estimate,
      limit: budget,
      windowMs: opts.tokenWindowMs,
      now: Date.now(),
    });
    if (!answer.ok) {
      // Waiting is not running: the slot goes to a session of the tenant that may have budget later.
      await releaseTenantSlot(deps, tenantId, sessionId);
      const resumesAt = new Date(answer.resumesAt).toISOString();
      await waitQueued(writer, ctx, `token budget exhausted, resumes at ${resumesAt}`);
      // Spread the sessions that wait for this window over its first tenth.
      return delay(job, token, answer.resumesAt + Math.floor(Math.random() * (opts.tokenWindowMs / 10)));
    }
    reservation = answer.reservation;
  }

  const cap = limits.maxConcurrentSessions ?? opts.maxConcurrentSessions;
  // The previous step of this runner chain took the slot here, moments ago: it is still held.
  const held = heldSlotsOf(deps.redis);
  const { fence } = writer.ctx;
  if (held.holds(tenantId, sessionId, fence, performance.now(), opts.slotTtlMs)) {
    held.carried(sessionId, fence);
  } else {
    const priority = sessionPriority(session);
    const askedAt = performance.now();
    const slot = await acquireSlot(deps.redis, deps.keys, {
      tenantId,
      sessionId,
      limit: cap > 0 ? cap : UNLIMITED,
      ttlMs: opts.slotTtlMs,
      jobId: job.id ?? '',
      priority,
    });
    if (!slot.acquired) {
      if (reservation) await settleTokens(deps.redis, deps.keys, reservation, 0, opts.tokenWindowMs);
      await waitQueued(writer, ctx, `waiting for a tenant slot (${slot.running}/${cap} running)`);
      const retry = session.kind === 'batch' ? opts.slotRetryMs * 10 : opts.slotRetryMs;
      return delay(job, token, Date.now() + jittered(retry));
    }
    held.took(tenantId, sessionId, fence, askedAt);
  }
  const renewal = renewSlot(deps.redis, deps.keys, tenantId, sessionId, opts.slotTtlMs);
  // The lease's signal is aborted when the step ends however it ends (lease-runner releases it).
  signal.addEventListener('abort', () => renewal.stop(), { once: true });
  if (signal.aborted) renewal.stop();

  return {
    async settle(outcome) {
      renewal.stop();
      if (!reservation) return;
      const actual =
        outcome.type === 'continue'
          ? outcome.usage
            ? usageTokens(outcome.usage)
            : reservation.tokens
          : outcome.type === 'lost'
            ? reservation.tokens // the stream was cut: what it used is unknown, keep the estimate
            : 0; // the provider refused it: nothing was generated
      try {
        await settleTokens(deps.redis, deps.keys, reservation, actual, opts.tokenWindowMs);
      } catch (err) {
        deps.logger.warn({ err, tenantId, sessionId }, 'token usage not counted');
      }
    },
  };
}

/** Every token the provider counted for a call: prompt (cached or not) and output. */
export function usageTokens(usage: Usage): number {
  return usage.input + usage.cache.read + usage.cache.write + usage.output + usage.reasoning;
}

/** Status `queued` with why; written only when it changes (a waiting step retries often). */
async function waitQueued(writer: SessionWriter, ctx: SessionContext, detail: string): Promise<void> {
  if (ctx.session.status === 'queued' && ctx.session.statusDetail === detail) return;
  const { tenantId, sessionId } = writer.ctx;
  writer.deps.logger.info({ ...writer.ctx, detail }, 'session waits for its tenant limits');
  await writer.write(async (trx, emit) => {
    await setSessionStatus(trx, tenantId, sessionId, 'queued', detail, null);
    emit({ type: 'session.status', status: 'queued', detail });
  });
}

async function delay(job: Job, token: string | undefined, until: number): Promise<never> {
  await job.moveToDelayed(until, token);
  throw new DelayedError();
}
