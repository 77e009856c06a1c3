// Turns and pending tasks read from the log: where the current user turn starts, how many
// compactions it has had, which compaction is still waiting for its summary. All by `seq`.

import type { WithParts } from '../schema/message.ts';
import type { CompactionPart } from '../schema/part.ts';
import { compactionPartOf, isCompletedSummary } from './history.ts';

/** A message the user typed: not written by Loopline, not a compaction marker. */
export function isTurnStart(msg: WithParts): boolean {
  return msg.info.role === 'user' && msg.info.synthetic !== true && compactionPartOf(msg) === undefined;
}

/** The newest message of `role` by seq (the model view is not in seq order around a boundary). */
export function newestByRole(messages: WithParts[], role: 'user' | 'assistant'): WithParts | undefined {
  let best: WithParts | undefined;
  for (const m of messages) if (m.info.role === role && (!best || m.info.seq > best.info.seq)) best = m;
  return best;
}

/**
 * The current turn: messages from the newest turn start on, in seq order. When the turn start was
 * summarised away by a boundary, every message in view belongs to the turn.
 */
export function turnOf(messages: WithParts[]): WithParts[] {
  const sorted = [...messages].sort((a, b) => a.info.seq - b.info.seq);
  for (let i = sorted.length - 1; i >= 0; i--) if (isTurnStart(sorted[i]!)) return sorted.slice(i);
  return sorted;
}

/**
 * Compactions in the current user turn (the optional maxCompactionsPerTurn cap). Counts compaction
 * parts since the newest turn start; a part carrying `iteration` (set when the loop created it)
 * fixes the count even if a boundary cut the turn start out of view.
 */
export function compactionsThisTurn(messages: WithParts[]): number {
  const turn = turnOf(messages);
  let counted = 0;
  for (let i = turn.length - 1; i >= 0; i--) {
    const part = compactionPartOf(turn[i]!);
    if (!part) continue;
    counted++;
    if (part.iteration !== undefined) return part.iteration + counted - 1;
  }
  return counted;
}

export interface PendingCompaction {
  message: WithParts;
  part: CompactionPart;
}

/** The newest compaction message with no completed summary answering it (closed no-ops aside). */
export function pendingCompaction(messages: readonly WithParts[]): PendingCompaction | undefined {
  const answered = new Set<string>();
  for (const m of messages) if (isCompletedSummary(m)) answered.add(m.info.parentId);
  let best: PendingCompaction | undefined;
  for (const m of messages) {
    const part = compactionPartOf(m);
    if (!part || part.noop || answered.has(m.info.id)) continue;
    if (!best || m.info.seq > best.message.info.seq) best = { message: m, part };
  }
  return best;
}
