import {
  type ChildAnswer,
  childAnswer,
  type DeferredCall,
  deferredCalls,
  ingestCap,
  type LateResult,
  type ToolPart,
} from '@loopline/core';
import { getSession, loadHistory, setSessionStatus, writeLateToolResult } from '@loopline/db';
import { wakeSession } from '@loopline/queue';
import type { Logger } from 'pino';
import type { Jobs, Resources, Store, Tokens } from '../deps.ts';
import { runStopped } from '../fairness/loop-stopped.ts';
import type { SessionContext } from '../session-context.ts';
import type { SessionWriter } from '../session-writer.ts';

// Deferred tool calls (core session/control.ts): a subagent's task and client tools. The step
// that made them ran its other tools and closed its reply; the calls stay `running`, marked with
// what they wait for, and decide() answers `wait` until each has a result.
//
// - settleDeferred (every step, before decide): results that are already known are written under
//   the session's fence — the answer of a child that stopped (idle or error), an error for a
//   client call past its deadline. This is also the healing path: whatever woke the session (the
//   child's notification, a timeout job, a message, a duplicate wake), it finds the answer.
// - enterWait (decide said `wait`): status `waiting` with a detail naming what it waits for; the
//   jobs that will wake it are (re)added under deterministic ids, so a lost one is repaired: the
//   child's first step, each client call's timeout.

/** Writes the results of deferred calls that are already known; true when it wrote any. */
export async function settleDeferred(
  deps: Store & Tokens,
  writer: SessionWriter,
  ctx: SessionContext,
  log: Logger,
): Promise<boolean> {
  // The log's replies holding deferred calls (loop facts): deferredCalls of the whole log.
  const calls = deferredCalls(ctx.logFacts.waiting);
  if (calls.length === 0) return false;
  const now = Date.now();
  const ready: Array<{ part: ToolPart; result: LateResult }> = [];
  for (const call of calls) {
    const part = partOf(ctx, call);
    if (!part) continue;
    if (call.awaiting === 'subagent') {
      const answer = await answerOfChild(deps, writer.ctx.tenantId, call);
      if (answer) ready.push({ part, result: toResult(answer, call) });
    } else if (call.deadline !== undefined && call.deadline <= now) {
      const ms = part.state.status === 'running' ? call.deadline - part.state.time.start : undefined;
      ready.push({
        part,
        result: {
          error: `timed out: the client sent no result${ms !== undefined ? ` within ${ms} ms` : ''}`,
        },
      });
    }
  }
  if (ready.length === 0) return false;
  const { tenantId, sessionId } = writer.ctx;
  const toolOutput = ctx.agent.toolOutput;
  await writer.write(async (trx, emit) => {
    for (const { part, result } of ready) {
      const done = await writeLateToolResult(trx, {
        tenantId,
        sessionId,
        call: part,
        result,
        now,
        toolOutput,
        tokenizer: deps.tokenizer,
        maxTokens: ingestCap(ctx.agent),
      });
      emit({ type: 'part.updated', part: done });
    }
  });
  log.info({ settled: ready.map((r) => r.part.callId) }, 'deferred tool calls answered');
  return true;
}

function partOf(ctx: SessionContext, call: DeferredCall): ToolPart | undefined {
  for (const m of ctx.history) {
    if (m.info.id !== call.messageId) continue;
    for (const p of m.parts) if (p.type === 'tool' && p.id === call.partId) return p;
  }
  return undefined;
}

function toResult(answer: ChildAnswer, call: DeferredCall): LateResult {
  const metadata = { childSessionId: call.childSessionId };
  return answer.ok ? { output: answer.output, metadata } : { error: answer.error, metadata };
}

/** The child's answer once it stopped; undefined while it works (queued, running, waiting, …). */
async function answerOfChild(
  deps: Store,
  tenantId: string,
  call: DeferredCall,
): Promise<ChildAnswer | undefined> {
  if (!call.childSessionId) return { ok: false, error: 'The subagent session is unknown' };
  const child = await getSession(deps.db, tenantId, call.childSessionId);
  if (!child) return { ok: false, error: `The subagent session ${call.childSessionId} does not exist` };
  if (child.status !== 'idle' && child.status !== 'error') return undefined;
  // An abort not yet consumed: the child is about to stop; its own notification will come.
  if (child.abortRequestedSeq !== null) return undefined;
  const history = await loadHistory(deps.db, tenantId, child.id, { fromSeq: child.boundarySeq });
  return childAnswer(child, history);
}

/** decide() said `wait`: status `waiting`, and the jobs that will end the wait are in the queue. */
export async function enterWait(
  deps: Resources,
  writer: SessionWriter,
  ctx: SessionContext,
  calls: DeferredCall[],
  log: Logger,
): Promise<void> {
  const { tenantId, sessionId } = writer.ctx;
  const now = Date.now();
  const children: string[] = [];
  const clients: string[] = [];
  for (const call of calls) {
    if (call.awaiting === 'subagent' && call.childSessionId) {
      children.push(call.childSessionId);
      await ensureChildRuns(deps, tenantId, call, ctx, log);
    } else if (call.awaiting === 'client') {
      clients.push(call.callId);
      if (call.deadline !== undefined) {
        await wakeSession(
          deps.queues,
          'tool-timeout',
          { sessionId, callId: call.callId },
          { tenantId, delayMs: Math.max(0, call.deadline - now) },
        );
      }
    }
  }
  const detail = [
    children.length > 0 ? `waiting for subagent ${children.join(', ')}` : '',
    clients.length > 0 ? `waiting for client tool results: ${clients.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('; ');
  const { session } = ctx;
  if (session.status === 'waiting' && session.statusDetail === detail) return;
  await writer.write(async (trx, emit) => {
    await setSessionStatus(trx, tenantId, sessionId, 'waiting', detail, null);
    emit({ type: 'session.status', status: 'waiting', detail });
  });
  // Waiting is not running: the slot goes to another session of the tenant, a batch item looks.
  await runStopped(deps, writer.ctx);
}

/** Re-adds the child's first step under its wake id: a no-op unless it was lost. */
async function ensureChildRuns(
  deps: Store & Jobs,
  tenantId: string,
  call: DeferredCall,
  ctx: SessionContext,
  log: Logger,
): Promise<void> {
  const part = partOf(ctx, call);
  const meta = part?.state.status === 'running' ? part.state.metadata : undefined;
  const messageId = typeof meta?.childMessageId === 'string' ? meta.childMessageId : undefined;
  if (!messageId || !call.childSessionId) return;
  const child = await getSession(deps.db, tenantId, call.childSessionId);
  if (child?.status !== 'queued') return;
  try {
    await wakeSession(
      deps.queues,
      'child-start',
      { sessionId: call.childSessionId, messageId },
      { tenantId },
    );
  } catch (err) {
    log.warn({ err, childSessionId: call.childSessionId }, 'could not wake the child session');
  }
}
