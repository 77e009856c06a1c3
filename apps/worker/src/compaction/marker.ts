import { COMPACTION_QUESTION, type Part } from '@loopline/core';
import { appendUserMessage, setSessionStatus } from '@loopline/db';
import type { SessionWriter } from '../session-writer.ts';

// The compaction marker (docs/context.md §5.1): a synthetic user message holding one compaction part.
// The loop treats it as a pending task until a completed summary answers it. Written only by a
// holder of the session lease, after checking that no other compaction is pending; the session
// turns `compacting` with it.

export interface MarkerPart {
  auto: boolean;
  overflow: boolean;
  iteration?: number;
  streak?: number;
  background?: boolean;
  instructions?: string;
}

/** Appends the compaction marker message; the session turns `compacting`. */
export async function appendCompactionMarker(writer: SessionWriter, agentName: string, part: MarkerPart) {
  const { tenantId, sessionId } = writer.ctx;
  const tokens = writer.deps.tokenizer.count(COMPACTION_QUESTION);
  return writer.write(async (trx, emit) => {
    const msg = await appendUserMessage(trx, {
      tenantId,
      sessionId,
      agent: agentName,
      synthetic: true,
      parts: [{ type: 'compaction', tokens, ...part }],
    });
    // In the same transaction: a session with a pending marker is never seen `idle` (a revert or
    // a second background job would otherwise act on a session that is about to compact).
    await setSessionStatus(trx, tenantId, sessionId, 'compacting', null, null);
    emit({ type: 'message.updated', message: msg.info });
    for (const p of msg.parts as Part[]) emit({ type: 'part.updated', part: p });
    emit({ type: 'session.status', status: 'compacting' });
    return msg;
  });
}
