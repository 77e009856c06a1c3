// Revert (docs/context.md §7) as a plan over the log: which rows a revert hides and where the
// session's boundary pointer points afterwards. Pure: the gateway loads the log, marks the rows
// (`reverted`, never deleted) and stores the pointer in one transaction.
//
// A compaction point is never split: when a summary would be hidden while its compaction message
// stays, the revert starts at that message (else the compaction would be pending again and rerun),
// so reverting to a summary or to input that arrived during a compaction reverts it whole. The new
// pointer is derived only from what stays, so any number of later compactions stop being boundaries.

import type { WithParts } from '../schema/message.ts';
import { bySeq, compactionPartOf, findBoundarySeq } from './history.ts';

export interface RevertPlan {
  /** Every message at or after this seq is hidden (the rows stay, marked `reverted`). */
  fromSeq: number;
  /** Ids of the messages the revert hides that were still visible, seq order. */
  hidden: string[];
  /**
   * The boundary pointer afterwards: findBoundarySeq of what stays visible, or null when no
   * completed compaction is left before the revert point (load the log from the start).
   */
  boundarySeq: number | null;
}

/** Plans hiding the message at `targetSeq` and all after it; `log` is the whole log, any order. */
export function planRevert(log: WithParts[], targetSeq: number): RevertPlan {
  const visible = bySeq(log).filter((m) => !m.info.reverted);
  const markers = new Map<string, number>();
  for (const m of visible) if (compactionPartOf(m)) markers.set(m.info.id, m.info.seq);
  let fromSeq = targetSeq;
  // Summaries answer older compaction messages; walking newest → oldest lowers fromSeq as far
  // as any hidden summary reaches back, including summaries the lowering itself pulls in.
  for (let i = visible.length - 1; i >= 0; i--) {
    const info = visible[i]!.info;
    if (info.seq < fromSeq) break;
    if (info.role !== 'assistant' || info.summary !== true) continue;
    const marker = markers.get(info.parentId);
    if (marker !== undefined && marker < fromSeq) fromSeq = marker;
  }
  const kept = visible.filter((m) => m.info.seq < fromSeq);
  const hidden = visible.filter((m) => m.info.seq >= fromSeq).map((m) => m.info.id);
  return { fromSeq, hidden, boundarySeq: findBoundarySeq(kept) ?? null };
}
