// Session control read from the log: tool calls the session is waiting on (subagents
// started by the task tool, client tools answered over HTTP), aborted turns, and `queue` mode's
// held mid-run messages. Pure: every answer is re-derived from the messages, by `seq`.
//
// queueView (`midRunMessages: "queue"`, docs/context.md §4): a user message sent while a turn was
// unfinished (no final reply before it) is held out of the view until the first reply after it
// that ends a turn; a final reply releases it right after itself with an effective seq just above
// (in a copy; the row is unchanged), so decide() sees a new turn. An aborted reply, or a user
// message typed after it that started a turn, leaves it where it is: it was part of that turn.

import type { WithParts } from '../schema/message.ts';
import type { ToolPart } from '../schema/part.ts';
import { isTurnStart } from './turn.ts';

/** What a deferred call waits for: a child session (task tool) or the API caller (client tool). */
export type Awaiting = 'subagent' | 'client';

export interface DeferredCall {
  messageId: string;
  partId: string;
  callId: string;
  tool: string;
  awaiting: Awaiting;
  /** awaiting subagent: the child session running the task. */
  childSessionId?: string;
  /** awaiting client: when the call becomes an error (ms since epoch). */
  deadline?: number;
}

/** Running-state metadata of a deferred call; what `deferredOf` reads back. */
export interface DeferredMetadata {
  awaiting: Awaiting;
  childSessionId?: string;
  /** The child's first (prompt) message, for its deterministic wake job id. */
  childMessageId?: string;
  deadline?: number;
  timeoutMs?: number;
  [key: string]: unknown;
}

/** The deferred call a tool part stands for, or undefined for any other part or state. */
export function deferredOf(part: ToolPart, messageId: string = part.messageId): DeferredCall | undefined {
  if (part.state.status !== 'running') return undefined;
  const meta = part.state.metadata;
  if (!meta || (meta.awaiting !== 'subagent' && meta.awaiting !== 'client')) return undefined;
  const call: DeferredCall = {
    messageId,
    partId: part.id,
    callId: part.callId,
    tool: part.tool,
    awaiting: meta.awaiting,
  };
  if (typeof meta.childSessionId === 'string') call.childSessionId = meta.childSessionId;
  if (typeof meta.deadline === 'number') call.deadline = meta.deadline;
  return call;
}

/** Calls the session waits on: running deferred tool parts of replies that finished without an error. */
export function deferredCalls(messages: readonly WithParts[]): DeferredCall[] {
  const out: DeferredCall[] = [];
  for (const m of messages) {
    const info = m.info;
    if (info.role !== 'assistant' || info.summary || info.finish === undefined || info.error) continue;
    for (const part of m.parts) {
      if (part.type !== 'tool') continue;
      const call = deferredOf(part, info.id);
      if (call) out.push(call);
    }
  }
  return out;
}

/** A reply ended by POST …/abort (its content streamed so far stays in the model view). */
export function isAbortedReply(msg: WithParts): boolean {
  return (
    msg.info.role === 'assistant' && msg.info.summary !== true && msg.info.error?.name === 'AbortedError'
  );
}

/** The newest reply after the newest typed user message was aborted (synthetic messages do not resume it). */
export function turnAborted(messages: WithParts[]): boolean {
  let start: WithParts | undefined;
  let lastUser: WithParts | undefined;
  for (const m of messages) {
    if (m.info.role !== 'user') continue;
    if (!lastUser || m.info.seq > lastUser.info.seq) lastUser = m;
    if (isTurnStart(m) && (!start || m.info.seq > start.info.seq)) start = m;
  }
  const from = (start ?? lastUser)?.info.seq;
  if (from === undefined) return false;
  let reply: WithParts | undefined;
  for (const m of messages) {
    if (m.info.role !== 'assistant' || m.info.summary || m.info.seq <= from) continue;
    if (!reply || m.info.seq > reply.info.seq) reply = m;
  }
  return reply !== undefined && isAbortedReply(reply);
}

/**
 * A reply after which the loop exits: closed, not asking for tools, holding no tool calls — the
 * loop's own exit test (loop.ts) — and not a compaction summary.
 */
export function isFinalReply(msg: WithParts): boolean {
  const info = msg.info;
  if (info.role !== 'assistant' || info.summary) return false;
  if (info.finish === undefined || info.finish === 'tool-calls' || info.finish === 'interrupted')
    return false;
  return !msg.parts.some((p) => p.type === 'tool');
}

/** The turn is over: aborted (turnAborted), or its newest reply came after its newest user message and is final. */
export function turnEnded(messages: WithParts[]): boolean {
  if (turnAborted(messages)) return true;
  let lastUser: WithParts | undefined;
  let lastReply: WithParts | undefined;
  for (const m of messages) {
    if (m.info.role === 'user') {
      if (!lastUser || m.info.seq > lastUser.info.seq) lastUser = m;
    } else if (!m.info.summary && (!lastReply || m.info.seq > lastReply.info.seq)) lastReply = m;
  }
  return !!lastUser && !!lastReply && lastReply.info.seq > lastUser.info.seq && isFinalReply(lastReply);
}

/**
 * The current turn was aborted, by a reply written after message `afterId` (a compaction's
 * marker: the abort came while it ran). False when that message is not in `messages`.
 */
export function turnAbortedAfter(messages: WithParts[], afterId: string): boolean {
  const from = messages.find((m) => m.info.id === afterId);
  if (!from || !turnAborted(messages)) return false;
  return messages.some((m) => isAbortedReply(m) && m.info.seq > from.info.seq);
}

export interface QueueView {
  /** The model view with held messages removed and released ones moved to where their turn ended. */
  view: WithParts[];
  /** Mid-run messages still waiting for the current turn to end, seq order. */
  held: WithParts[];
}

/** `queue` mode over filterCompacted output: mid-run messages held until their turn ends (file header). */
export function queueView(view: WithParts[]): QueueView {
  const sorted = [...view].sort((a, b) => a.info.seq - b.info.seq);
  const held: WithParts[] = [];
  const releasedAfter = new Map<string, WithParts[]>();
  const moved = new Set<string>();
  for (let i = 0; i < sorted.length; i++) {
    const msg = sorted[i]!;
    if (!isQueuedCandidate(msg) || !arrivedMidTurn(sorted, i)) continue;
    const end = turnEndAfter(sorted, i);
    if (!end) {
      held.push(msg);
      moved.add(msg.info.id);
    } else if (isFinalReply(end)) {
      const list = releasedAfter.get(end.info.id) ?? [];
      list.push(msg);
      releasedAfter.set(end.info.id, list);
      moved.add(msg.info.id);
    }
  }
  if (moved.size === 0) return { view, held };
  const out: WithParts[] = [];
  for (const msg of view) {
    if (moved.has(msg.info.id)) continue;
    out.push(msg);
    const released = releasedAfter.get(msg.info.id);
    if (!released) continue;
    released.forEach((r, k) => {
      const seq = msg.info.seq + (k + 1) / (released.length + 1);
      out.push({ ...r, info: { ...r.info, seq } });
    });
  }
  return { view: out, held };
}

function isQueuedCandidate(msg: WithParts): boolean {
  return msg.info.role === 'user' && msg.info.midRun === true && isTurnStart(msg);
}

/** The newest reply or turn start before index i decides whether the loop was still working. */
function arrivedMidTurn(sorted: WithParts[], i: number): boolean {
  for (let j = i - 1; j >= 0; j--) {
    const m = sorted[j]!;
    if (m.info.role === 'assistant') {
      if (m.info.summary) continue;
      return !isFinalReply(m) && !isAbortedReply(m);
    }
    if (isTurnStart(m) && m.info.role === 'user' && m.info.midRun !== true) return true;
  }
  return false;
}

/** The first reply after index i that ends a turn, or a turn start typed after the session stopped. */
function turnEndAfter(sorted: WithParts[], i: number): WithParts | undefined {
  for (let j = i + 1; j < sorted.length; j++) {
    const m = sorted[j]!;
    if (isFinalReply(m) || isAbortedReply(m)) return m;
    if (m.info.role === 'user' && m.info.midRun !== true && isTurnStart(m)) return m;
  }
  return undefined;
}

/**
 * A user message at the end of `view` has no reply ending its turn yet: a compaction requested now
 * hands the turn back to the loop, one on an idle (or failed) session leaves it idle.
 */
export function turnInProgress(view: WithParts[]): boolean {
  let lastUser: WithParts | undefined;
  let lastReply: WithParts | undefined;
  for (const m of view) {
    if (m.info.role === 'user') {
      if (!lastUser || m.info.seq > lastUser.info.seq) lastUser = m;
    } else if (m.info.summary !== true && (!lastReply || m.info.seq > lastReply.info.seq)) lastReply = m;
  }
  if (!lastUser) return false;
  // A manual or background compaction marker alone (nothing asked since) opens no turn.
  if (!lastReply && !view.some(isTurnStart)) return false;
  if (lastReply && lastReply.info.seq > lastUser.info.seq) {
    if (isFinalReply(lastReply) || isAbortedReply(lastReply) || isTurnError(lastReply)) return false;
  } else if (lastUser.info.role === 'user' && lastUser.info.synthetic && !isTurnStart(lastUser)) {
    // The newest user message is a marker of an earlier compaction: what came before it decides.
    return turnInProgress(view.filter((m) => m !== lastUser));
  }
  return true;
}

/** The record of a turn that ended in an error (see turnErrorMessage in the worker): never shown to the model. */
export function isTurnError(msg: WithParts): boolean {
  return msg.info.role === 'assistant' && msg.info.finish === 'error' && msg.info.error !== undefined;
}

/** A client tool call the session waits on, as GET /v1/sessions/:id lists it. */
export interface PendingClientCall {
  callId: string;
  tool: string;
  input: Record<string, unknown>;
  /** When the call was made (ms since epoch). */
  createdAt: number;
  deadline?: number;
}

/** Client tool calls still waiting for POST …/tool-results (the deferredCalls of the log), in log order. */
export function pendingClientCalls(messages: WithParts[]): PendingClientCall[] {
  const parts = new Map<string, ToolPart>();
  for (const m of messages) for (const p of m.parts) if (p.type === 'tool') parts.set(p.id, p);
  const out: PendingClientCall[] = [];
  for (const call of deferredCalls(messages)) {
    const part = parts.get(call.partId);
    if (call.awaiting !== 'client' || part?.state.status !== 'running') continue;
    const pending: PendingClientCall = {
      callId: call.callId,
      tool: call.tool,
      input: part.state.input,
      createdAt: part.state.time.start,
    };
    if (call.deadline !== undefined) pending.deadline = call.deadline;
    out.push(pending);
  }
  return out;
}
