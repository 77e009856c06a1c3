import {
  type AgentConfig,
  type ContextBudget,
  contextBudget,
  estimateNextPrompt,
  filterCompacted,
  findAnchor,
  type ModelLimits,
  queueView,
  type WithParts,
} from '@loopline/core';
import { getSession, latestCompletedCompaction, loadHistory, type SessionInfo } from '@loopline/db';
import { limitsFor } from '@loopline/llm';
import type { WorkerDeps } from './deps.ts';
import { type RequestShape, requestShape } from './step/request.ts';

// What every session job reads before deciding: the session row, its log from the boundary
// pointer on (O(messages since the boundary)), the model view, the agent with its limits
// resolved, the request's fixed overhead and the next-prompt estimate. Read-only; the step,
// prune, compaction and background jobs all measure with these same numbers.

export type ResolvedAgent = AgentConfig & { limits: ModelLimits };

export interface SessionContext {
  session: SessionInfo;
  /** The log from session.boundarySeq on, seq order. */
  history: WithParts[];
  /** filterCompacted(history) (queueView in queue mode): what the next call is built from. */
  view: WithParts[];
  agent: ResolvedAgent;
  budget: ContextBudget;
  shape: RequestShape;
  /** Provider-scale estimate of the next prompt (CONTEXT.md §2 point 1). */
  estimate: number;
}

/** The agent's limits, else the model catalog's (resolved once per job). */
export function resolveAgent(agent: AgentConfig): ResolvedAgent {
  return { ...agent, limits: limitsFor(agent.model, agent.limits) };
}

export async function loadContext(
  deps: WorkerDeps,
  tenantId: string,
  sessionId: string,
  /** The row just read by the caller (e.g. acquireFenceWithSession): skips the getSession. */
  known?: SessionInfo,
): Promise<SessionContext | undefined> {
  const session = known ?? (await getSession(deps.db, tenantId, sessionId));
  if (!session) return undefined;
  const history = await loadHistory(deps.db, tenantId, sessionId, { fromSeq: session.boundarySeq });
  return contextOf(deps, session, history);
}

/** The context of an already loaded session and log (after the caller changed the log). */
export async function contextOf(
  deps: WorkerDeps,
  session: SessionInfo,
  history: WithParts[],
): Promise<SessionContext> {
  const agent = resolveAgent(session.agent);
  // midRunMessages "queue": mid-run messages wait for the end of the turn (core queueView).
  const view =
    agent.midRunMessages === 'queue' ? queueView(filterCompacted(history)).view : filterCompacted(history);
  const shape = await requestShape(deps, session, view);
  return {
    session,
    history,
    view,
    agent,
    budget: contextBudget(agent.limits, agent.compaction),
    shape,
    estimate: estimateOf(view, agent, session, shape.overheadTokens),
  };
}

export function estimateOf(
  view: WithParts[],
  agent: AgentConfig,
  session: Pick<SessionInfo, 'tokenRatio'>,
  overhead: number,
): number {
  return estimateNextPrompt({
    anchor: findAnchor(view),
    messages: view,
    ratio: session.tokenRatio ?? undefined,
    resendsReasoning: agent.resendsReasoning,
    model: agent.model,
    overhead,
  });
}

/** The growth guard's reference: what the newest completed compaction left (provider scale). */
export async function lastCompactionTokensAfter(
  deps: WorkerDeps,
  tenantId: string,
  sessionId: string,
): Promise<number | undefined> {
  const last = await latestCompletedCompaction(deps.db, tenantId, sessionId);
  return last?.tokensAfter ?? undefined;
}
