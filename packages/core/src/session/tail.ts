// Which recent messages a compaction keeps verbatim (docs/context.md §5.2): the last `tailTurns` user
// turns within a token budget, split at a message boundary when a turn does not fit. Everything
// before the tail is the head, which the summary replaces.
//
// selectTail walks newest → oldest adding whole messages of the last `tailTurns` turns while they
// fit; the first that does not fit ends the tail (an oversized turn keeps its newest messages). A
// turn starts at each user message that is no compaction marker; the previous boundary's messages
// are never in the tail; when the tail would leave nothing new to summarise it is empty.

import type { WithParts } from '../schema/message.ts';
import { compactionPartOf } from './history.ts';
import { messageTokens } from './tokens.ts';

/** clamp(usable / 4, 2,000, 8,000): enough for the latest exchange, never a large share of the window. */
export function defaultTailBudget(usable: number): number {
  return Math.min(8_000, Math.max(2_000, Math.floor(usable / 4)));
}

export interface TailOptions {
  tailTurns?: number;
  /** Token budget of the tail (preserveRecentTokens, else defaultTailBudget(usable)). */
  budget: number;
}

export interface TailSplit {
  head: WithParts[];
  tail: WithParts[];
  /** First tail message: the compaction part's `tailStartId`. */
  tailStartId?: string;
}

/** Splits the model view before the compaction message into head and verbatim tail (file header). */
export function selectTail(messages: WithParts[], opts: TailOptions): TailSplit {
  const tailTurns = opts.tailTurns ?? 2;
  // Index of the first message of the oldest turn the tail may reach.
  let floor = messages.length;
  let turns = 0;
  for (let i = messages.length - 1; i >= 0 && turns < tailTurns; i--) {
    const msg = messages[i]!;
    if (msg.info.role === 'user' && compactionPartOf(msg) === undefined) {
      turns++;
      floor = i;
    }
  }
  let start = messages.length;
  let used = 0;
  for (let i = messages.length - 1; i >= floor; i--) {
    const tokens = messageTokens(messages[i]!);
    if (used + tokens > opts.budget) break;
    used += tokens;
    start = i;
  }
  const head = messages.slice(0, start);
  if (start >= messages.length || !head.some(isNewContent)) return { head: messages, tail: [] };
  const tail = messages.slice(start);
  return { head, tail, tailStartId: tail[0]!.info.id };
}

/**
 * Something a compaction of `messages` would summarise for the first time: a message that is not a
 * compaction marker nor a summary (those are already told). Without it, a compaction is a no-op.
 */
export function hasNewContent(messages: WithParts[]): boolean {
  return messages.some(isNewContent);
}

// The previous boundary (its compaction message and summary) is already summarised.
function isNewContent(msg: WithParts): boolean {
  if (msg.info.role === 'assistant') return msg.info.summary !== true;
  return compactionPartOf(msg) === undefined;
}
