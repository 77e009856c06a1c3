import {
  autoCompactEnabled,
  bySeq,
  type ContextGauge,
  contextGauge,
  findBoundary,
  findBoundarySeq,
  MESSAGE_FRAMING_TOKENS,
  type ModelLimits,
  pruneEnabled,
  ratioState,
  type WithParts,
} from '@loopline/core';
import {
  type CompactionInfo,
  compactionSummaryOf,
  listCompactions,
  listSteps,
  revertedMessageIds,
  type SessionInfo,
  type StepInfo,
} from '@loopline/db';
import { agentLimits, tokenizerFamily } from '@loopline/llm';
import type { AppDeps } from '../plugins/deps.ts';
import type { Boundary, StepEstimateView } from '../schemas/context.ts';
import type { CompactionRecord, CompactionSummary } from '../schemas/sessions.ts';
import { type ModelInput, modelInput } from './model-view.ts';

// The context-management state of a session (docs/context.md §2, §5.7, §7) as the API shows it: the
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
  ratio: { value: number; learned: boolean; weight: number; margin: number };
  /** Per model step: the pre-call estimate beside the reported prompt. */
  estimates: StepEstimateView[];
}

/**
 * Most compaction records and step estimates GET …/context shows (the newest): both grow with every
 * request to compact or message a session, and a read must not grow with them.
 */
export const CONTEXT_RECORDS_MAX = 1_000;

/** The context-management state of a session as GET …/context shows it. */
export async function contextState(
  deps: AppDeps,
  session: SessionInfo,
  /**
   * estimates: also read the step ledger's estimates (GET …/context). records: false leaves the
   * compaction records out (the session view counts them in PostgreSQL: compactionSummaryOf).
   */
  opts: { estimates?: boolean; records?: boolean } = {},
): Promise<SessionContextState> {
  const newest = CONTEXT_RECORDS_MAX;
  const [input, records, steps] = await Promise.all([
    modelInput(deps, session),
    opts.records === false ? Promise.resolve([]) : compactionRecords(deps, session, newest),
    opts.estimates ? listSteps(deps.db, session.tenantId, session.id, { newest }) : Promise.resolve([]),
  ]);
  const agent = session.agent;
  const limits = agentLimits(agent);
  const learned = ratioState({
    tokenRatio: session.tokenRatio,
    tokenRatioWeight: session.tokenRatioWeight,
    model: agent.model,
    tokenizer: tokenizerFamily(agent),
  });
  const gauge = contextGauge({
    messages: input.visible,
    limits,
    compaction: agent.compaction,
    flags: deps.flags,
    model: agent.model,
    ratio: learned.ratio,
    framing: MESSAGE_FRAMING_TOKENS,
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
    ratio: {
      value: learned.ratio,
      learned: learned.weight > 0,
      weight: learned.weight,
      margin: learned.margin,
    },
    estimates: steps.flatMap((s) => (s.kind === 'step' && s.estimate ? [estimateView(s)] : [])),
  };
}

function estimateView(s: StepInfo): StepEstimateView {
  const e = s.estimate!;
  const reported = s.usage ? s.usage.input + s.usage.cache.read + s.usage.cache.write : null;
  return {
    step: s.step,
    messageId: s.messageId,
    outcome: s.outcome,
    estimate: e.tokens,
    bound: e.bound,
    anchored: e.anchored,
    ratio: e.ratio,
    reported,
    errorPercent: reported ? Math.round(((e.tokens - reported) / reported) * 1000) / 10 : null,
  };
}

/**
 * The session's compaction runs (the `newest` of them), oldest first, each marked `reverted` when
 * its compaction message is.
 */
async function compactionRecords(
  deps: AppDeps,
  session: SessionInfo,
  newest: number,
): Promise<CompactionRecord[]> {
  const rows = await listCompactions(deps.db, session.tenantId, session.id, { newest });
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
 * any status (a running or failed one shows here). Counted by PostgreSQL (db compactionSummaryOf).
 */
export async function compactionSummary(deps: AppDeps, session: SessionInfo): Promise<CompactionSummary> {
  const { completed, lastAt, last } = await compactionSummaryOf(deps.db, session.tenantId, session.id);
  return {
    count: completed,
    lastAt: lastAt ? iso(lastAt) : null,
    last: last ? toRecord(last, false) : null,
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
