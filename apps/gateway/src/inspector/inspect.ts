import {
  bySeq,
  type CompactionPart,
  compactionPartOf,
  compactionRange,
  promptTokens,
  type Usage,
  type WithParts,
} from '@loopline/core';
import {
  type CompactionInfo,
  listCompactions,
  listSteps,
  loadHistory,
  type OperatorSession,
  type StepInfo,
} from '@loopline/db';
import { contextState } from '../lib/context.ts';
import type { AppDeps } from '../plugins/deps.ts';

// What the session inspector shows (operators only, any tenant): the whole log (reverted rows
// included), every compaction run with the range its summary replaced, the step ledger (one row
// per job attempt) and a token series for the gauge chart. Read-only; built from the same
// repositories and core functions the worker and the API use.

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** input + cache reads + cache writes + output: the context a call used, provider scale. */
export const usageTokens = (u: Usage): number => promptTokens(u) + u.output;

export interface ReplacedRange {
  /** Messages of the model view the summary replaced (the head), in the order the model saw them. */
  messageIds: string[];
  count: number;
  fromSeq: number | null;
  toSeq: number | null;
  /** The first message kept verbatim after the summary (the tail), if any. */
  tailStartId: string | null;
  tailStartSeq: number | null;
  /**
   * false when the compaction message was reverted: the range is then recomputed as if nothing
   * before it had been reverted (the log does not record when a revert happened).
   */
  exact: boolean;
}

export interface InspectedCompaction {
  id: string;
  /** 1-based, oldest first (C1, C2, … on the page). */
  n: number;
  messageId: string;
  markerSeq: number | null;
  summaryMessageId: string | null;
  summarySeq: number | null;
  /** The summary's text parts, joined. */
  summaryText: string | null;
  reason: string;
  rung: string | null;
  status: string;
  auto: boolean | null;
  overflow: boolean | null;
  background: boolean | null;
  instructions: string | null;
  tokensBefore: number | null;
  tokensAfter: number | null;
  headMessages: number | null;
  model: string | null;
  jobId: string | null;
  attempt: number | null;
  startedAt: string;
  finishedAt: string | null;
  durationMs: number | null;
  requests: number | null;
  error: unknown;
  reverted: boolean;
  replaced: ReplacedRange | null;
}

export interface InspectedStep {
  id: string;
  step: number;
  kind: string;
  jobId: string;
  attempt: number;
  fence: number;
  messageId: string | null;
  messageSeq: number | null;
  startedAt: string;
  finishedAt: string | null;
  durationMs: number | null;
  outcome: string | null;
  usage: Usage | null;
  /** usageTokens(usage), or null without a report. */
  tokens: number | null;
  requestId: string | null;
  responseId: string | null;
  error: unknown;
}

export interface GaugePoint {
  /** Ordinal position on the chart's x axis. */
  i: number;
  at: string;
  kind: 'step' | 'compaction-before' | 'compaction-after';
  tokens: number;
  /** The ledger row (kind step) or the compaction run (kind compaction-*). */
  ref: string;
  label: string;
}

export interface Inspection {
  session: {
    id: string;
    tenantId: string;
    tenantName: string;
    agentName: string;
    model: string;
    status: string;
    statusDetail: string | null;
    error: unknown;
    title: string | null;
    fence: number;
    lastSeq: number;
    stepCount: number;
    boundarySeq: number | null;
    tokenRatio: number | null;
    compactionCount: number;
    createdAt: string;
    updatedAt: string;
  };
  /** The gauge now (core's contextGauge, as GET /v1/sessions/:id/context) and the limits it uses. */
  gauge: {
    used: number;
    usable: number;
    trigger: number;
    background: number;
    percentOfTrigger: number;
    limits: { context: number; input?: number | undefined; output: number };
    flags: { autocompact: boolean; prune: boolean };
  };
  boundary: { seq: number; messageId: string; summaryMessageId: string; tailStartId: string | null } | null;
  /** The whole log, seq order, reverted messages included (info.reverted). */
  messages: WithParts[];
  compactions: InspectedCompaction[];
  steps: InspectedStep[];
  /** Tokens over time: each step's reported usage, each compaction's before/after. */
  series: GaugePoint[];
}

/** Everything the inspector shows of one session: log, compactions, steps and the gauge series. */
export async function inspectSession(deps: AppDeps, session: OperatorSession): Promise<Inspection> {
  const [log, records, steps, state] = await Promise.all([
    loadHistory(deps.db, session.tenantId, session.id, { includeReverted: true }),
    listCompactions(deps.db, session.tenantId, session.id),
    listSteps(deps.db, session.tenantId, session.id),
    contextState(deps, session),
  ]);
  const messages = bySeq(log);
  const seqOf = new Map(messages.map((m) => [m.info.id, m.info.seq]));
  const compactions = records.map((r, i) => inspectCompaction(r, i + 1, messages, seqOf));
  const inspectedSteps = steps.map((s) => inspectStep(s, seqOf));
  return {
    session: {
      id: session.id,
      tenantId: session.tenantId,
      tenantName: session.tenantName,
      agentName: session.agentName,
      model: session.agent.model,
      status: session.status,
      statusDetail: session.statusDetail,
      error: session.error,
      title: session.title,
      fence: session.fence,
      lastSeq: session.lastSeq,
      stepCount: session.stepCount,
      boundarySeq: session.boundarySeq,
      tokenRatio: session.tokenRatio,
      compactionCount: session.compactionCount,
      createdAt: session.createdAt.toISOString(),
      updatedAt: session.updatedAt.toISOString(),
    },
    gauge: {
      used: state.gauge.used,
      usable: state.gauge.usable,
      trigger: state.gauge.trigger,
      background: state.gauge.background,
      percentOfTrigger: state.gauge.percentOfTrigger,
      limits: state.limits,
      flags: state.flags,
    },
    boundary: state.boundary,
    messages,
    compactions,
    steps: inspectedSteps,
    series: gaugeSeries(inspectedSteps, compactions),
  };
}

function inspectStep(s: StepInfo, seqOf: Map<string, number>): InspectedStep {
  return {
    id: s.id,
    step: s.step,
    kind: s.kind,
    jobId: s.jobId,
    attempt: s.attempt,
    fence: s.fence,
    messageId: s.messageId,
    messageSeq: s.messageId ? (seqOf.get(s.messageId) ?? null) : null,
    startedAt: s.startedAt.toISOString(),
    finishedAt: iso(s.finishedAt),
    durationMs: s.durationMs,
    outcome: s.outcome,
    usage: s.usage,
    tokens: s.usage ? usageTokens(s.usage) : null,
    requestId: s.requestId,
    responseId: s.responseId,
    error: s.error,
  };
}

function inspectCompaction(
  r: CompactionInfo,
  n: number,
  messages: WithParts[],
  seqOf: Map<string, number>,
): InspectedCompaction {
  const marker = messages.find((m) => m.info.id === r.messageId);
  const part: CompactionPart | undefined = marker ? compactionPartOf(marker) : undefined;
  const summary = r.summaryMessageId ? messages.find((m) => m.info.id === r.summaryMessageId) : undefined;
  const summaryText = summary
    ? summary.parts
        .flatMap((p) => (p.type === 'text' ? [p.text] : []))
        .join('\n\n')
        .trim()
    : null;
  return {
    id: r.id,
    n,
    messageId: r.messageId,
    markerSeq: marker?.info.seq ?? null,
    summaryMessageId: r.summaryMessageId,
    summarySeq: summary?.info.seq ?? null,
    summaryText,
    reason: r.reason,
    rung: r.rung,
    status: r.status,
    auto: part?.auto ?? null,
    overflow: part?.overflow ?? null,
    background: part?.background ?? null,
    instructions: part?.instructions ?? null,
    tokensBefore: r.tokensBefore,
    tokensAfter: r.tokensAfter,
    headMessages: r.headMessages,
    model: r.model,
    jobId: r.jobId,
    attempt: r.attempt,
    startedAt: r.startedAt.toISOString(),
    finishedAt: iso(r.finishedAt),
    durationMs: r.durationMs,
    requests: r.requests,
    error: r.error,
    reverted: marker?.info.reverted === true,
    replaced: marker ? replacedRange(messages, marker, r.tailStartId ?? part?.tailStartId, seqOf) : null,
  };
}

/**
 * The head a compaction's summary replaced: the model view just before its compaction message
 * (core's compactionRange, i.e. filterCompacted of everything before it — an earlier summary and
 * its tail included) up to the first message of the kept tail.
 */
export function replacedRange(
  messages: WithParts[],
  marker: WithParts,
  tailStartId: string | null | undefined,
  seqOf: Map<string, number>,
): ReplacedRange | null {
  const exact = marker.info.reverted !== true;
  // A reverted marker: recompute over the log before it as it stood (nothing reverted yet).
  const log = exact
    ? messages
    : messages
        .filter((m) => m.info.seq <= marker.info.seq)
        .map((m) => ({ ...m, info: { ...m.info, reverted: undefined } }));
  const range = compactionRange(log as WithParts[], marker.info.id);
  if (!range) return null;
  const tailIndex = tailStartId ? range.frozen.findIndex((m) => m.info.id === tailStartId) : -1;
  const head = tailIndex >= 0 ? range.frozen.slice(0, tailIndex) : range.frozen;
  const seqs = head.map((m) => m.info.seq);
  return {
    messageIds: head.map((m) => m.info.id),
    count: head.length,
    fromSeq: seqs.length > 0 ? Math.min(...seqs) : null,
    toSeq: seqs.length > 0 ? Math.max(...seqs) : null,
    tailStartId: tailStartId ?? null,
    tailStartSeq: tailStartId ? (seqOf.get(tailStartId) ?? null) : null,
    exact,
  };
}

/**
 * The gauge over time: each loop step with a usage report (its context, provider scale) and each
 * compaction's tokens before (when it started) and after (when it finished), in time order. The x
 * axis is ordinal: a session's steps come in bursts, so wall-clock spacing would hide them.
 */
export function gaugeSeries(steps: InspectedStep[], compactions: InspectedCompaction[]): GaugePoint[] {
  type Raw = Omit<GaugePoint, 'i'> & { order: number };
  const raw: Raw[] = [];
  for (const s of steps) {
    // Loop steps only: a compaction's own summary call is another request, not the session's context.
    if (s.kind !== 'step' || s.tokens === null) continue;
    raw.push({
      at: s.finishedAt ?? s.startedAt,
      kind: 'step',
      tokens: s.tokens,
      ref: s.id,
      label: `step ${s.step} (attempt ${s.attempt}, ${s.outcome ?? 'running'})`,
      order: 1,
    });
  }
  for (const c of compactions) {
    if (c.tokensBefore !== null)
      raw.push({
        at: c.startedAt,
        kind: 'compaction-before',
        tokens: c.tokensBefore,
        ref: c.id,
        label: `C${c.n} before (${c.reason})`,
        order: 0,
      });
    if (c.tokensAfter !== null && c.status === 'completed')
      raw.push({
        at: c.finishedAt ?? c.startedAt,
        kind: 'compaction-after',
        tokens: c.tokensAfter,
        ref: c.id,
        label: `C${c.n} after (${c.rung ?? 'summary'})`,
        order: 2,
      });
  }
  raw.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.order - b.order));
  return raw.map(({ order: _order, ...p }, i) => ({ ...p, i }));
}
