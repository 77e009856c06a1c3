import {
  type AgentConfig,
  type ContextBudget,
  contextBudget,
  estimateView,
  filterCompacted,
  type LoopFacts,
  loopFacts,
  type ModelLimits,
  type PromptEstimate,
  queueView,
  type RatioState,
  type ResolvedCapabilities,
  ratioState,
  type WithParts,
} from '@loopline/core';
import { getSession, latestCompletedCompaction, loadHistory, type SessionInfo } from '@loopline/db';
import { agentLimits, capabilitiesFor, tokenizerFamily } from '@loopline/llm';
import type { CacheDeps, Metered, Store, Tokens, WorkerDeps } from './deps.ts';
import { perDeps } from './per-deps.ts';
import {
  defaultSessionCache,
  type PrefetchedChanges,
  type RequestMemo,
  SessionCache,
  type ViewFacts,
} from './session-cache.ts';
import { type RequestShape, requestShape } from './step/request.ts';

// What every session job reads before deciding: the session row, its log from the boundary on
// (through the session cache), the model view, the resolved agent, the request's fixed overhead
// and the next-prompt estimate. Read-only, so step, prune, compaction and background jobs all
// measure with the same numbers.

export type ResolvedAgent = AgentConfig & { limits: ModelLimits; caps: ResolvedCapabilities };

export interface SessionContext {
  session: SessionInfo;
  /** The log from session.boundarySeq on, seq order. */
  history: WithParts[];
  /** filterCompacted(history) (queueView in queue mode): what the next call is built from. */
  view: WithParts[];
  /** loopFacts(view): what decide() reads (kept up to date by the session cache). */
  facts: LoopFacts;
  /** loopFacts(history): unfinished replies and deferred calls of the log. */
  logFacts: LoopFacts;
  agent: ResolvedAgent;
  budget: ContextBudget;
  shape: RequestShape;
  /**
   * Provider-scale bound of the next prompt the checks use (docs/context.md §2 point 1): the best
   * guess (`prompt.tokens`) plus the session's margin on the part tiktoken measured.
   */
  estimate: number;
  prompt: PromptEstimate;
  /** The session cache's request memo (absent without the cache): the model call converts only what is new. */
  memo?: RequestMemo;
}

/** The agent's limits and capabilities, else the model catalog's (resolved once per job). */
export function resolveAgent(agent: AgentConfig): ResolvedAgent {
  return { ...agent, limits: agentLimits(agent), caps: capabilitiesFor(agent) };
}

/** The session's provider/tiktoken ratio with its margin (learned, else the model family's prior). */
export function sessionRatio(
  session: Pick<SessionInfo, 'tokenRatio' | 'tokenRatioWeight'>,
  agent: AgentConfig,
): RatioState {
  return ratioState({
    tokenRatio: session.tokenRatio,
    tokenRatioWeight: session.tokenRatioWeight,
    model: agent.model,
    tokenizer: tokenizerFamily(agent),
  });
}

/** Loads a session's context (cache refresh or fresh load); undefined when it is not this tenant's. */
export async function loadContext(
  deps: Store & Tokens & Metered & CacheDeps,
  tenantId: string,
  sessionId: string,
  /** The row just read by the caller (e.g. acquireFenceWithSession): skips the getSession. */
  known?: SessionInfo,
  /** Log changes read with that row (lease-runner): the cache's refresh needs no statement of its own. */
  prefetched?: PrefetchedChanges,
): Promise<SessionContext | undefined> {
  const session = known ?? (await getSession(deps.db, tenantId, sessionId));
  if (!session) return undefined;
  const cache = sessionCacheOf(deps);
  if (!cache) {
    const history = await loadHistory(deps.db, tenantId, sessionId, { fromSeq: session.boundarySeq });
    return contextOf(deps, session, history);
  }
  const cached = await cache.history(deps, tenantId, sessionId, session.boundarySeq, prefetched);
  if (!cached) return undefined;
  const ctx = await contextOf(deps, session, cached.history, cached.compacted, cached.facts, cached.logFacts);
  ctx.memo = cached.memo;
  return ctx;
}

/**
 * The context of an already loaded session and log; `compacted` and `facts` when the caller keeps
 * them (the cache does), so a step does not walk the whole view.
 */
export async function contextOf(
  deps: Store & Tokens,
  session: SessionInfo,
  history: WithParts[],
  compacted: WithParts[] = filterCompacted(history),
  facts?: ViewFacts,
  /** loopFacts(history), when the caller keeps it. */
  logFacts?: LoopFacts,
): Promise<SessionContext> {
  const agent = resolveAgent(session.agent);
  // midRunMessages "queue": mid-run messages wait for the end of the turn (core queueView), which
  // moves messages: the facts of `compacted` are not the view's.
  const queued = agent.midRunMessages === 'queue';
  const view = queued ? queueView(compacted).view : compacted;
  const known = queued ? undefined : facts;
  const shape = await requestShape(deps, session, view, known?.readable);
  // With the cache's facts the estimate reads only what the anchor does not cover (core view-estimate.ts).
  const { ratio, margin } = sessionRatio(session, agent);
  const prompt = estimateView({
    view,
    facts: known,
    ratio,
    margin,
    resendsReasoning: agent.resendsReasoning,
    model: agent.model,
    overhead: shape.overheadTokens,
  });
  return {
    session,
    history,
    view,
    facts: known?.loop ?? loopFacts(view),
    logFacts: logFacts ?? loopFacts(history),
    agent,
    budget: contextBudget(agent.limits, agent.compaction),
    shape,
    estimate: prompt.bound,
    prompt,
  };
}

/** The growth guard's reference: what the newest completed compaction left (provider scale). */
export async function lastCompactionTokensAfter(
  deps: Store,
  tenantId: string,
  sessionId: string,
): Promise<number | undefined> {
  const last = await latestCompletedCompaction(deps.db, tenantId, sessionId);
  return last?.tokensAfter ?? undefined;
}

// Keyed by the deps object the caller passes (always the process's one WorkerDeps), so the
// narrow type below does not change which cache a job finds.
const defaultCache = perDeps((deps: Pick<WorkerDeps, 'metrics'>) =>
  watch(deps, new SessionCache(defaultSessionCache)),
);

/**
 * The worker's session cache: `deps.sessionCache` (main.ts sizes it from WORKER_SESSION_CACHE_*),
 * else one with the default size per deps object; `null` turns it off.
 */
export function sessionCacheOf(deps: Pick<WorkerDeps, 'sessionCache' | 'metrics'>): SessionCache | undefined {
  if (deps.sessionCache === null) return undefined;
  if (deps.sessionCache) return deps.sessionCache.enabled ? deps.sessionCache : undefined;
  return defaultCache(deps);
}

/** Reports a cache's lookups and size through the worker's metrics. */
export function watch(deps: Pick<WorkerDeps, 'metrics'>, cache: SessionCache): SessionCache {
  const metrics = deps.metrics;
  if (!metrics) return cache;
  cache.onLookup = (result, reason) => metrics.sessionCache(result, reason);
  metrics.watchSessionCache(cache.stats);
  return cache;
}
