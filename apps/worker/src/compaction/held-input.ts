import type { CompactionRange, SessionEvent, UserMessage } from '@loopline/core';
import { type Trx, updateMessageInfo } from '@loopline/db';

// Compaction is a barrier (CONTEXT.md §5): input that arrives while one runs is held (it is
// after the compaction message, outside the frozen range) and delivered afterwards as what it
// is. The gateway marks anything sent while the session says `compacting` as mid-run; that is
// only true when a turn was being worked on. Sent while an idle session was compacted (the
// background job, or POST …/compact between turns), it opens a new turn: its mid-run mark is
// removed here, in the compaction's own commit, so it is neither wrapped as a steer nor held
// by `queue` mode.

/** Clears `midRun` on the user messages that arrived during a compaction of an idle session. */
export async function releaseHeldInput(
  trx: Trx,
  tenantId: string,
  emit: (e: SessionEvent) => void,
  range: CompactionRange,
  turnWasRunning: boolean,
): Promise<void> {
  if (turnWasRunning) return;
  for (const m of range.pending) {
    if (m.info.role !== 'user' || m.info.midRun !== true) continue;
    const info: UserMessage = { ...m.info };
    delete info.midRun;
    await updateMessageInfo(trx, tenantId, info);
    emit({ type: 'message.updated', message: info });
  }
}
