import type { CompactionRange, SessionEvent } from '@loopline/core';
import { type Trx, userMessagesAfter } from '@loopline/db';

// Compaction is a barrier (docs/context.md §5.2): input that arrives while one runs is held (it is
// after the compaction message, outside the frozen range) and delivered afterwards as what it
// is. The gateway marks anything sent while the session says `compacting` as mid-run; that is
// only true when a turn was being worked on. Sent while an idle session was compacted (the
// background job, or POST …/compact between turns), it opens a new turn: its mid-run mark is
// removed here, in the compaction's own commit, so it is neither wrapped as a steer nor held
// by `queue` mode. Read in the commit's transaction, not from the job's snapshot: the input
// that matters is what arrived while the summary was being written.

/** The user input after the compaction message, as it stands once the commit lands; true when there is any. */
export async function releaseHeldInput(
  trx: Trx,
  tenantId: string,
  emit: (e: SessionEvent) => void,
  range: CompactionRange,
  turnWasRunning: boolean,
): Promise<boolean> {
  const { sessionId, seq } = range.marker.info;
  const after = await userMessagesAfter(trx, tenantId, sessionId, seq, !turnWasRunning);
  const before = new Map(range.pending.map((m) => [m.info.id, m.info]));
  for (const info of after) {
    const known = before.get(info.id);
    // Unchanged rows the job already saw need no event.
    if (known && known.role === 'user' && known.midRun === (info.role === 'user' ? info.midRun : undefined))
      continue;
    emit({ type: 'message.updated', message: info });
  }
  return after.length > 0;
}
