import {
  autoCompactEnabled,
  bySeq,
  type ContextGauge,
  contextGauge,
  findBoundary,
  findBoundarySeq,
  type ModelLimits,
  pruneEnabled,
  type WithParts,
} from '@loopline/core';
import { type CompactionInfo, listCompactions, revertedMessageIds, type SessionInfo } from '@loopline/db';
import { limitsFor } from '@loopline/llm';
import type { AppDeps } from '../app.ts';
import type { Boundary, CompactionRecord, CompactionSummary } from '../schemas.ts';
import { type ModelInput, modelInput } from './model-view.ts';

// The context-management state of a session (CONTEXT.md §2, §5.7, §7) as the API shows it: the
// gauge (core's contextGauge over the model view), the compaction records, the boundary the model
// view starts from and the switches in effect. Read-only.

const iso = (d: Date): string => d.toISOString();

export interface SessionContextState {
  input: ModelInput;
  /** The agent's limits, else the model catalog's: what the worker's checks use. */
  limits: ModelLimits;
  gauge: ContextGauge;
  flags: { autocompact: boolean; prune: boolean };
  boundary: Boundary | null;
  /** Oldest first, reverted ones included (marked). */
  compactions: CompactionRecord[];
}

export async function contextState(deps: AppDeps, session: SessionInfo): Promise<SessionContextState> {
  const [input, records] = await Promise.all([modelInput(deps, session), compactionRecords(deps, session)]);
  const agent = session.agent;
  const limits = limitsFor(agent.model, agent.limits);
  const gauge = contextGauge({
    messages: input.visible,
    limits,
    compaction: agent.compaction,
    flags: deps.flags,
    model: agent.model,
    ratio: session.tokenRatio ?? undefined,
    resendsReasoning: agent.resendsReasoning,
    overhead: input.overhead,
  });
  return {
    input,
    limits,
    gauge,
    flags: {
      autocompact: autoCompactEnabled(agent.compaction, deps.flags),
      prune: pruneEnabled(agent.compaction, deps.flags),
    },
    boundary: boundaryOf(input.history),
    compactions: records,
  };
}

/** The session's compaction runs, oldest first, each marked `reverted` when its compaction message is. */
export async function compactionRecords(deps: AppDeps, session: SessionInfo): Promise<CompactionRecord[]> {
  const rows = await listCompactions(deps.db, session.tenantId, session.id);
  const reverted = await revertedMessageIds(
    deps.db,
    session.tenantId,
    session.id,
    rows.map((r) => r.messageId),
  );
  return rows.map((r) => toRecord(r, reverted.has(r.messageId)));
}

function toRecord(r: CompactionInfo, reverted: boolean): CompactionRecord {
  return {
    id: r.id,
    messageId: r.messageId,
    summaryMessageId: r.summaryMessageId,
    reason: r.reason,
    rung: r.rung,
    status: r.status,
    tokensBefore: r.tokensBefore,
    tokensAfter: r.tokensAfter,
    headMessages: r.headMessages,
    tailStartId: r.tailStartId,
    model: r.model,
    startedAt: iso(r.startedAt),
    finishedAt: r.finishedAt ? iso(r.finishedAt) : null,
    durationMs: r.durationMs,
    requests: r.requests,
    error: r.error,
    reverted,
  };
}

/**
 * count: completed compactions still in the history (a revert before a compaction point takes it
 * out); lastAt: when the newest of them finished; last: the newest run still in the history, of
 * any status (a running or failed one shows here).
 */
export function compactionSummary(records: readonly CompactionRecord[]): CompactionSummary {
  const live = records.filter((r) => !r.reverted);
  const completed = live.filter((r) => r.status === 'completed');
  const newest = completed.at(-1);
  return {
    count: completed.length,
    lastAt: newest ? (newest.finishedAt ?? newest.startedAt) : null,
    last: live.at(-1) ?? null,
  };
}

/** The newest completed boundary in the loaded log, or null. */
export function boundaryOf(history: WithParts[]): Boundary | null {
  const log = bySeq(history).filter((m) => !m.info.reverted);
  const found = findBoundary(log);
  const seq = findBoundarySeq(log);
  if (!found || seq === undefined) return null;
  return {
    seq,
    messageId: log[found.compactionIndex]!.info.id,
    summaryMessageId: found.summary.info.id,
    tailStartId: found.tailIndex !== undefined ? log[found.tailIndex]!.info.id : null,
  };
}
