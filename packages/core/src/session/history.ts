// The model's view of a session's log: where the newest completed compaction boundary cuts it
// (filterCompacted, docs/context.md §4 and §7) and where the database may start loading (findBoundarySeq).
// Pure: orders rows by `seq` (PostgreSQL's order), never by ids or clocks.
//
// The view is [compaction message, its summary, kept tail, everything after the compaction
// message], or every message without a completed boundary. Reverted rows go first (a compaction
// after a revert point is no boundary); summaries that did not complete, and older compaction
// messages and summaries inside the tail, never enter it; input that arrived during the
// compaction job is kept after the tail. findBoundarySeq's contract: filterCompacted of the rows
// from `findBoundarySeq(all)` on equals filterCompacted(all), so the worker stores that seq after
// each compaction, and a revert across the boundary must clear it.

import type { AssistantMessage, WithParts } from '../schema/message.ts';
import type { CompactionPart } from '../schema/part.ts';

/** A summary that may be a boundary: finished and without an error (failed/aborted ones never are). */
export function isCompletedSummary(msg: WithParts): msg is WithParts & { info: AssistantMessage } {
  return (
    msg.info.role === 'assistant' &&
    msg.info.summary === true &&
    msg.info.finish !== undefined &&
    msg.info.error === undefined
  );
}

/** The compaction part of a compaction user message, if it is one. */
export function compactionPartOf(msg: WithParts): CompactionPart | undefined {
  if (msg.info.role !== 'user') return undefined;
  for (const part of msg.parts) if (part.type === 'compaction') return part;
  return undefined;
}

export interface Boundary {
  /** Index (in the non-reverted list) of the compaction user message. */
  compactionIndex: number;
  /** Index of the first kept tail message, or undefined when no tail was kept or it is not loaded. */
  tailIndex: number | undefined;
  /** The completed summary answering the compaction message. */
  summary: WithParts;
}

/** The newest completed boundary of `visible` (seq order, no reverted rows), walking newest → oldest. */
export function findBoundary(visible: WithParts[]): Boundary | undefined {
  const summaries = new Map<string, WithParts>();
  for (let i = visible.length - 1; i >= 0; i--) {
    const msg = visible[i]!;
    if (isCompletedSummary(msg)) {
      // Newest first: if a compaction somehow got two summaries, the newest one wins.
      if (!summaries.has(msg.info.parentId)) summaries.set(msg.info.parentId, msg);
      continue;
    }
    const summary = summaries.get(msg.info.id);
    const part = summary && compactionPartOf(msg);
    if (!summary || !part) continue;
    let tailIndex: number | undefined;
    if (part.tailStartId !== undefined) {
      const t = visible.findIndex((m) => m.info.id === part.tailStartId);
      if (t >= 0 && t < i) tailIndex = t;
    }
    return { compactionIndex: i, tailIndex, summary };
  }
  return undefined;
}

// Earlier boundaries inside a kept tail are history already told by the newest summary.
function isBoundaryMarker(msg: WithParts): boolean {
  return compactionPartOf(msg) !== undefined || (msg.info.role === 'assistant' && msg.info.summary === true);
}

/** What the model may see, in the order it sees it (the rules in the file header). */
export function filterCompacted(messages: WithParts[]): WithParts[] {
  const visible = bySeq(messages).filter((m) => !m.info.reverted);
  const boundary = findBoundary(visible);
  if (!boundary) return visible.filter((m) => !isFailedSummary(m));
  const { compactionIndex, tailIndex, summary } = boundary;
  const result: WithParts[] = [visible[compactionIndex]!, summary];
  if (tailIndex !== undefined) {
    for (const msg of visible.slice(tailIndex, compactionIndex)) if (!isBoundaryMarker(msg)) result.push(msg);
  }
  for (const msg of visible.slice(compactionIndex + 1)) {
    if (msg === summary || (msg.info.role === 'assistant' && msg.info.summary === true)) continue;
    result.push(msg);
  }
  return result;
}

/** `messages` in seq order: the same array when already sorted (the database orders by seq), else a sorted copy. */
export function bySeq(messages: WithParts[]): WithParts[] {
  for (let i = 1; i < messages.length; i++) {
    if (messages[i]!.info.seq < messages[i - 1]!.info.seq) {
      return [...messages].sort((a, b) => a.info.seq - b.info.seq);
    }
  }
  return messages;
}

function isFailedSummary(msg: WithParts): boolean {
  return msg.info.role === 'assistant' && msg.info.summary === true && !isCompletedSummary(msg);
}

/** The first seq filterCompacted needs (the tail's start, else the compaction message); undefined: all. */
export function findBoundarySeq(messages: WithParts[]): number | undefined {
  const visible = bySeq(messages).filter((m) => !m.info.reverted);
  const boundary = findBoundary(visible);
  if (!boundary) return undefined;
  const start = visible[boundary.tailIndex ?? boundary.compactionIndex]!;
  return start.info.seq;
}
