import { deferredOf } from '@loopline/core';
import type { Logger } from 'pino';
import type { CacheDeps, Metered, Resources, Tokens } from '../deps.ts';
import { loadContext, type SessionContext } from '../session-context.ts';
import type { SessionWriter } from '../session-writer.ts';
import { unfinishedAssistants } from '../step/recover.ts';
import { endAbortedTurn, requestSessionAbort } from './abort.ts';
import { settleDeferred } from './waits.ts';

// What a step does before decide() for session control: subagents started by a step whose runner
// died are aborted, a recorded abort ends the turn (and the job, unless a newer user message
// starts another), and deferred calls whose results are known (a stopped child, an expired client
// call) are written. Returns the context to decide on, or
// undefined when the step is over.

/** Applies session control before decide(): orphaned children, a recorded abort, known deferred results. */
export async function applySessionControl(
  deps: Resources & Tokens & Metered & CacheDeps,
  writer: SessionWriter,
  ctx: SessionContext,
  log: Logger,
): Promise<SessionContext | undefined> {
  const { tenantId, sessionId } = writer.ctx;
  // A runner died mid-step after starting subagents: closeInterrupted (next) marks those tasks
  // interrupted — never re-run — so their children are aborted instead of running unseen.
  const orphans = unfinishedAssistants(ctx.history).flatMap((m) =>
    m.parts.flatMap((p) => (p.type === 'tool' ? (deferredOf(p)?.childSessionId ?? []) : [])),
  );
  if (orphans.length > 0) await requestSessionAbort(deps, tenantId, orphans, log);
  let current: SessionContext | undefined = ctx;
  if (current.session.abortRequestedSeq !== null) {
    const outcome = await endAbortedTurn(deps, writer, log);
    if (outcome === 'stopped') return undefined;
    if (outcome === 'continue') current = await loadContext(deps, tenantId, sessionId);
  }
  if (current && (await settleDeferred(deps, writer, current, log))) {
    current = await loadContext(deps, tenantId, sessionId);
  }
  return current;
}
