import type { AssistantMessage, Part, ToolPart, WithParts } from '@loopline/core';
import { isCompletedStep } from '@loopline/core';
import { type Db, loadHistory } from '@loopline/db';
import { analyseFenceAudit, type FenceAuditReport } from './fence-audit.ts';

// The durability invariants (docs/durability.md), checked after a fault run straight in PostgreSQL, in the webhook
// tool server's own log and in the gateway's model view. Returns every violation with a precise
// message; a clean run returns none.
//
//   end-state         every session reached an end status (idle unless told otherwise), nothing
//                     is left open (assistant message, tool call, compaction run), and the newest
//                     user turn has a final answer
//   accepted-once     every user message the gateway accepted is in the log exactly once, and
//                     the log holds no user message that was not accepted
//   no-duplicates     seq is 1..n with no gap; one model call per step number; at most one
//                     step-start and step-finish per message; one tool part per call id; at most
//                     one completed summary and one completed compaction run per compaction point
//   tool-once         every completed webhook call ran exactly once on the tool server, no call
//                     ran twice, and every execution belongs to a tool part that got a result
//   model-view        every tool call in the model view has its result, and every result its call
//   fencing           zero worker writes under a superseded fence, zero unfenced worker writes
//                     (PostgreSQL audit, see fence-audit.ts); in the steps ledger, a step finished
//                     under fence F finished before any step of a newer fence started
//   compaction-loop   compactions in a row without a completed model step between them ≤ the
//                     agent's compaction.maxIterations (and per user turn ≤ maxCompactionsPerTurn
//                     when set)

export interface SessionExpectation {
  tenantId: string;
  sessionId: string;
  /** Ids of the user messages the gateway accepted (each once, replays included once). */
  accepted: string[];
  /** Allowed final statuses (default ['idle']). */
  endStatuses?: string[];
}

export interface InvariantInput {
  /** A connection to the test database that no fault touches. */
  db: Db;
  sessions: SessionExpectation[];
  /** The tool server's executions per call id. */
  toolCalls: Map<string, number>;
  /** Tools executed by the webhook tool server (others, e.g. read_output, run in the worker). */
  webhookTools: string[];
  /** GET /v1/sessions/:id/messages?view=model of a session. */
  modelView?: (s: SessionExpectation) => Promise<{ messages: ModelViewMessage[] }>;
  /** fault_audit is installed in the database (fence-audit.ts). */
  fenceAudit?: boolean;
  /** Every execution the tool server saw belongs to one of `sessions` (flags orphan executions). */
  allSessions?: boolean;
  /** The model streams one text block per reply (the mock does): more live text parts in one message are duplicates. */
  singleTextBlock?: boolean;
}

export interface ModelViewMessage {
  role: string;
  content: unknown;
}

export interface Violation {
  invariant: string;
  sessionId?: string;
  message: string;
}

export interface InvariantStats {
  sessions: number;
  messages: number;
  userMessages: number;
  assistantMessages: number;
  toolCalls: number;
  toolCallsInterrupted: number;
  stepsInterrupted: number;
  providerErrors: number;
  compactions: number;
  compactionRuns: number;
  compactionRunsSuperseded: number;
  /** Failed compaction runs by error name and message. */
  compactionFailures: Record<string, number>;
  prunedOutputs: number;
  summaries: number;
  stepRows: number;
  stepAttemptsAbove1: number;
  endStatuses: Record<string, number>;
  audit?: FenceAuditReport;
}

export interface InvariantReport {
  violations: Violation[];
  stats: InvariantStats;
}

const isOpenTool = (p: Part) =>
  p.type === 'tool' && (p.state.status === 'pending' || p.state.status === 'running');

/** A user message a person wrote (through the gateway), not a marker or replay Loopline wrote. */
function isRealUser(m: WithParts): boolean {
  return m.info.role === 'user' && !m.info.synthetic && !m.parts.some((p) => p.type === 'compaction');
}

/** A final answer: a closed assistant reply without error that asks for nothing more. */
function isFinalAnswer(m: WithParts): boolean {
  if (m.info.role !== 'assistant' || m.info.summary) return false;
  const { finish, error } = m.info;
  if (error || finish === undefined || finish === 'tool-calls' || finish === 'interrupted') return false;
  return !m.parts.some((p) => p.type === 'tool');
}

/** Checks the durability invariants; every violation, none for a clean run. */
export async function checkInvariants(input: InvariantInput): Promise<InvariantReport> {
  const violations: Violation[] = [];
  const stats: InvariantStats = {
    sessions: input.sessions.length,
    messages: 0,
    userMessages: 0,
    assistantMessages: 0,
    toolCalls: 0,
    toolCallsInterrupted: 0,
    stepsInterrupted: 0,
    providerErrors: 0,
    compactions: 0,
    compactionRuns: 0,
    compactionRunsSuperseded: 0,
    compactionFailures: {},
    prunedOutputs: 0,
    summaries: 0,
    stepRows: 0,
    stepAttemptsAbove1: 0,
    endStatuses: {},
  };
  const seenCallIds = new Set<string>();
  const webhook = new Set(input.webhookTools);

  for (const s of input.sessions) {
    const v = (invariant: string, message: string) =>
      violations.push({ invariant, sessionId: s.sessionId, message });
    const row = await input.db
      .selectFrom('sessions')
      .select(['status', 'last_seq', 'agent', 'status_detail'])
      .where('id', '=', s.sessionId)
      .executeTakeFirst();
    if (!row) {
      v('end-state', 'session row missing');
      continue;
    }
    const log = await loadHistory(input.db, s.tenantId, s.sessionId, { includeReverted: true });
    stats.messages += log.length;
    stats.endStatuses[row.status] = (stats.endStatuses[row.status] ?? 0) + 1;

    // end-state
    const allowed = s.endStatuses ?? ['idle'];
    if (!allowed.includes(row.status))
      v(
        'end-state',
        `status is ${row.status}${row.status_detail ? ` (${row.status_detail})` : ''}, expected ${allowed.join('|')}`,
      );
    for (const m of log) {
      if (m.info.role === 'assistant' && m.info.finish === undefined && !m.info.error)
        v('end-state', `assistant message ${m.info.id} (seq ${m.info.seq}) is still open`);
      for (const p of m.parts)
        if (isOpenTool(p))
          v('end-state', `tool call ${(p as ToolPart).callId} is still ${(p as ToolPart).state.status}`);
    }
    const realUsers = log.filter(isRealUser);
    const newestUser = realUsers.at(-1);
    if (newestUser && row.status === 'idle') {
      const answered = log.some((m) => m.info.seq > newestUser.info.seq && isFinalAnswer(m));
      if (!answered)
        v('end-state', `the newest user message (seq ${newestUser.info.seq}) has no final answer`);
    }

    // accepted-once
    const accepted = new Set(s.accepted);
    if (accepted.size !== s.accepted.length)
      v('accepted-once', 'the gateway accepted one message id twice (duplicate 202 ids)');
    const byId = new Map<string, number>();
    for (const m of log) byId.set(m.info.id, (byId.get(m.info.id) ?? 0) + 1);
    for (const id of accepted) {
      const n = byId.get(id) ?? 0;
      if (n !== 1) v('accepted-once', `accepted message ${id} is in the log ${n} times`);
    }
    for (const m of realUsers)
      if (!accepted.has(m.info.id))
        v(
          'accepted-once',
          `user message ${m.info.id} (seq ${m.info.seq}) is in the log but was never accepted`,
        );
    const texts = new Map<string, number>();
    for (const m of realUsers) {
      const text = m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
      texts.set(text, (texts.get(text) ?? 0) + 1);
    }
    for (const [text, n] of texts)
      if (n > 1)
        v('accepted-once', `user text ${JSON.stringify(text.slice(0, 60))} is in the log ${n} times`);
    stats.userMessages += realUsers.length;

    // no-duplicates
    const seqs = log.map((m) => m.info.seq);
    for (let i = 0; i < seqs.length; i++)
      if (seqs[i] !== i + 1) {
        v('no-duplicates', `message seqs are not 1..n: position ${i} has seq ${seqs[i]}`);
        break;
      }
    if (Number(row.last_seq) !== log.length)
      v('no-duplicates', `last_seq ${row.last_seq} but ${log.length} messages`);
    const steps = new Map<number, string>();
    const callIds = new Map<string, number>();
    const summariesByPoint = new Map<string, number>();
    for (const m of log) {
      const starts = m.parts.filter((p) => p.type === 'step-start').length;
      const finishes = m.parts.filter((p) => p.type === 'step-finish').length;
      if (starts > 1) v('no-duplicates', `message ${m.info.id} has ${starts} step-start parts`);
      if (finishes > 1) v('no-duplicates', `message ${m.info.id} has ${finishes} step-finish parts`);
      if (m.info.role === 'assistant') {
        const info = m.info as AssistantMessage;
        const live = m.parts.filter((p) => p.type === 'text' && !p.ignored && p.text.trim() !== '').length;
        if (live > 1 && (info.summary || input.singleTextBlock))
          v(
            'no-duplicates',
            `${info.summary ? 'summary' : 'assistant'} message ${info.id} has ${live} live text parts`,
          );
        stats.assistantMessages++;
        if (info.error?.name === 'StepInterruptedError') stats.stepsInterrupted++;
        if (info.error?.name === 'APIError' || info.error?.name === 'ContextOverflowError')
          stats.providerErrors++;
        if (info.summary) {
          if (info.finish !== undefined && !info.error) {
            stats.summaries++;
            summariesByPoint.set(info.parentId, (summariesByPoint.get(info.parentId) ?? 0) + 1);
          }
        } else if (info.step !== undefined) {
          const prior = steps.get(info.step);
          if (prior) v('no-duplicates', `step ${info.step} has two model calls: ${prior} and ${info.id}`);
          steps.set(info.step, info.id);
        }
      }
      for (const p of m.parts) {
        if (p.type === 'compaction') stats.compactions++;
        if (p.type !== 'tool') continue;
        stats.toolCalls++;
        callIds.set(p.callId, (callIds.get(p.callId) ?? 0) + 1);
        if (p.state.status === 'error' && p.state.interrupted) stats.toolCallsInterrupted++;
        if (p.state.status === 'completed' && p.state.time.compacted !== undefined) stats.prunedOutputs++;
      }
      if (m.info.role === 'user' && accepted.has(m.info.id)) {
        const textParts = m.parts.filter((p) => p.type === 'text').length;
        if (textParts !== 1) v('no-duplicates', `accepted message ${m.info.id} has ${textParts} text parts`);
      }
    }
    for (const [callId, n] of callIds) if (n > 1) v('no-duplicates', `tool call ${callId} has ${n} parts`);
    for (const [point, n] of summariesByPoint)
      if (n > 1) v('no-duplicates', `compaction point ${point} has ${n} completed summaries`);
    const runs = await input.db
      .selectFrom('compactions')
      .select(['id', 'message_id', 'status', 'error'])
      .where('session_id', '=', s.sessionId)
      .execute();
    stats.compactionRuns += runs.length;
    const completedRuns = new Map<string, number>();
    for (const r of runs) {
      if (r.status === 'completed')
        completedRuns.set(r.message_id, (completedRuns.get(r.message_id) ?? 0) + 1);
      if (r.status === 'running') v('end-state', `compaction run ${r.id} is still running`);
      if (r.status === 'failed') {
        stats.compactionRunsSuperseded++;
        const e = r.error as { name?: string; message?: string } | null;
        const why = `${e?.name ?? '?'}: ${(e?.message ?? '').slice(0, 60)}`;
        stats.compactionFailures[why] = (stats.compactionFailures[why] ?? 0) + 1;
      }
    }
    for (const [point, n] of completedRuns)
      if (n > 1) v('no-duplicates', `compaction point ${point} has ${n} completed runs`);

    // tool-once
    for (const m of log)
      for (const p of m.parts) {
        if (p.type !== 'tool') continue;
        seenCallIds.add(p.callId);
        const n = input.toolCalls.get(p.callId) ?? 0;
        if (n > 1) v('tool-once', `tool call ${p.callId} (${p.tool}) ran ${n} times`);
        if (p.state.status === 'completed' && webhook.has(p.tool) && n !== 1)
          v('tool-once', `completed tool call ${p.callId} (${p.tool}) ran ${n} times on the tool server`);
        if (n > 0 && p.state.status !== 'completed' && p.state.status !== 'error')
          v('tool-once', `tool call ${p.callId} ran but its part is ${p.state.status}`);
      }

    // model-view
    if (input.modelView) {
      try {
        const view = await input.modelView(s);
        violations.push(...modelViewViolations(s.sessionId, view.messages));
      } catch (err) {
        v('model-view', `could not load the model view: ${(err as Error).message}`);
      }
    }

    // fencing: the steps ledger
    const ledger = await input.db
      .selectFrom('steps')
      .select(['id', 'fence', 'started_at', 'finished_at', 'attempt', 'kind'])
      .where('session_id', '=', s.sessionId)
      .execute();
    stats.stepRows += ledger.length;
    stats.stepAttemptsAbove1 += ledger.filter((r) => r.attempt > 1).length;
    for (const a of ledger) {
      if (!a.finished_at) continue;
      for (const b of ledger) {
        if (Number(b.fence) <= Number(a.fence)) continue;
        if (a.finished_at.getTime() >= b.started_at.getTime())
          v(
            'fencing',
            `steps ledger: ${a.kind} ${a.id} (fence ${a.fence}) finished at ${a.finished_at.toISOString()}, ` +
              `after ${b.kind} ${b.id} (fence ${b.fence}) started at ${b.started_at.toISOString()}`,
          );
      }
    }

    // compaction-loop
    const guard = (row.agent as { compaction?: { maxIterations?: number; maxCompactionsPerTurn?: number } })
      .compaction;
    const maxIterations = guard?.maxIterations ?? 3;
    const perTurn = guard?.maxCompactionsPerTurn ?? 0;
    let inTurn = 0;
    let inRow = 0;
    let turnSeq = 0;
    for (const m of log) {
      if (isRealUser(m)) {
        inTurn = 0;
        turnSeq = m.info.seq;
      } else if (m.parts.some((p) => p.type === 'compaction')) {
        inTurn++;
        inRow++;
        if (inRow === maxIterations + 1)
          v(
            'compaction-loop',
            `more than ${maxIterations} compactions in a row without progress at seq ${m.info.seq}`,
          );
        if (perTurn > 0 && inTurn === perTurn + 1)
          v('compaction-loop', `the user turn at seq ${turnSeq} has more than ${perTurn} compactions`);
      } else if (isCompletedStep(m)) inRow = 0;
    }
  }

  if (input.allSessions) {
    for (const [callId, n] of input.toolCalls)
      if (!seenCallIds.has(callId))
        violations.push({
          invariant: 'tool-once',
          message: `the tool server ran call ${callId} (${n}×) that no tool part holds`,
        });
  }

  if (input.fenceAudit) {
    const audit = await analyseFenceAudit(
      input.db,
      input.sessions.map((s) => s.sessionId),
    );
    stats.audit = audit;
    for (const w of audit.staleWrites)
      violations.push({
        invariant: 'fencing',
        sessionId: w.sessionId,
        message: `${w.app} wrote ${w.table} ${w.rowId} (${w.op}) under fence ${w.fence} after fence ${w.newestFence} was taken`,
      });
    for (const w of audit.unfencedWrites)
      violations.push({
        invariant: 'fencing',
        sessionId: w.sessionId,
        message: `${w.app} wrote ${w.table} ${w.rowId} (${w.op}) in a transaction that checked no fence`,
      });
  }
  return { violations, stats };
}

/** Every tool-call has a tool-result in the tool message right after it, and no result is orphaned. */
export function modelViewViolations(sessionId: string, messages: ModelViewMessage[]): Violation[] {
  const out: Violation[] = [];
  const parts = (m: ModelViewMessage | undefined) =>
    Array.isArray(m?.content) ? (m.content as Array<{ type: string; toolCallId?: string }>) : [];
  const answered = new Set<string>();
  messages.forEach((m, i) => {
    if (m.role !== 'assistant') return;
    const calls = parts(m).filter((p) => p.type === 'tool-call');
    if (calls.length === 0) return;
    const next = messages[i + 1];
    const results = new Set(
      next?.role === 'tool'
        ? parts(next)
            .filter((p) => p.type === 'tool-result')
            .map((p) => p.toolCallId)
        : [],
    );
    for (const c of calls) {
      if (!results.has(c.toolCallId))
        out.push({
          invariant: 'model-view',
          sessionId,
          message: `tool call ${c.toolCallId} has no result in the model view`,
        });
      answered.add(c.toolCallId ?? '');
    }
  });
  for (const m of messages) {
    if (m.role !== 'tool') continue;
    for (const p of parts(m))
      if (p.type === 'tool-result' && !answered.has(p.toolCallId ?? ''))
        out.push({
          invariant: 'model-view',
          sessionId,
          message: `tool result ${p.toolCallId} has no call in the model view`,
        });
  }
  return out;
}
