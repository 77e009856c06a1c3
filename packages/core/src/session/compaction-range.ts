// What one compaction job works on (docs/context.md §5.2): the frozen model view before the compaction
// message (head + tail candidates), the input that arrived after it, and — after an overflow —
// the user request that must reach the model again. Pure: the job loads, this only selects.

import type { WithParts } from '../schema/message.ts';
import type { CompactionPart } from '../schema/part.ts';
import { bySeq, compactionPartOf, filterCompacted } from './history.ts';
import { isTurnStart } from './turn.ts';

export interface CompactionRange {
  /** The compaction user message and its part. */
  marker: WithParts;
  part: CompactionPart;
  /** Model view of everything before the marker: what the summary replaces, plus the tail candidates. */
  frozen: WithParts[];
  /** Model view of what came after the marker (input that arrived while the compaction waited). */
  pending: WithParts[];
}

/**
 * `history`: the session's log from its boundary pointer on (any order). Undefined when the
 * marker is not in it or holds no compaction part (reverted, or not a compaction message).
 */
export function compactionRange(history: WithParts[], markerId: string): CompactionRange | undefined {
  const log = bySeq(history).filter((m) => !m.info.reverted);
  const marker = log.find((m) => m.info.id === markerId);
  const part = marker && compactionPartOf(marker);
  if (!marker || !part) return undefined;
  const seq = marker.info.seq;
  const frozen = filterCompacted(log.filter((m) => m.info.seq < seq));
  // Other summaries are either this marker's own (being written) or failed ones: never input.
  const pending = filterCompacted(log).filter(
    (m) => m.info.seq > seq && !(m.info.role === 'assistant' && m.info.summary === true),
  );
  return { marker, part, frozen, pending };
}

/**
 * The user's own request left unanswered at the end of `frozen`: only failed calls (a rejected
 * request, an overflow) follow it. After an overflow compaction it is replayed instead of the
 * continue message, unless the kept tail already shows it verbatim.
 */
export function unansweredRequest(frozen: WithParts[]): WithParts | undefined {
  for (let i = frozen.length - 1; i >= 0; i--) {
    const msg = frozen[i]!;
    if (msg.info.role === 'assistant') {
      if (msg.info.error === undefined) return undefined;
      continue;
    }
    return isTurnStart(msg) ? msg : undefined;
  }
  return undefined;
}
