import { derivedId, type Part, partTokens, type SessionEvent } from '@loopline/core';
import {
  appendUserMessage,
  type BatchItemInfo,
  recordItemSent,
  type SessionInfo,
  transitionSessionStatus,
} from '@loopline/db';
import { publishEvents, wakeSession } from '@loopline/queue';
import type { Jobs, Resources, Tokens } from '../deps.ts';

// A batch item posts its next user message, as the gateway's POST …/messages would, in one
// transaction: the session idle → queued, the message (its id derived from the session and the
// message number, so a retry finds it), and the item's `sent` counter compare-and-set. Then the
// wake job, at batch priority, and the events. Returns false when the session was not idle or
// another run of the item posted first (nothing is written).

class NotPosted extends Error {}

/** The id of a batch session's n-th message, derived so a retried post finds it. */
export function batchMessageId(sessionId: string, n: number): string {
  return derivedId('msg', sessionId, `b${n}`);
}

/** Posts a batch item's next message and wakes its session; false when the session was not idle. */
export async function postBatchMessage(
  deps: Resources & Tokens,
  item: BatchItemInfo,
  session: SessionInfo,
): Promise<boolean> {
  const { tenantId, sessionId, batchId, index } = item;
  const n = item.sent;
  const text = item.messages[n]?.text;
  if (text === undefined) return false;
  const draft = { type: 'text' as const, text, tokens: 0 };
  const tokens = partTokens({ ...draft, id: '', sessionId, messageId: '' } as Part, deps.tokenizer);
  let message: Awaited<ReturnType<typeof appendUserMessage>>;
  try {
    message = await deps.db.transaction().execute(async (trx) => {
      if (!(await recordItemSent(trx, batchId, index, n))) throw new NotPosted();
      if (!(await transitionSessionStatus(trx, tenantId, sessionId, ['idle'], 'queued')))
        throw new NotPosted();
      return appendUserMessage(trx, {
        tenantId,
        sessionId,
        agent: session.agentName,
        id: batchMessageId(sessionId, n),
        parts: [{ ...draft, tokens }],
      });
    });
  } catch (err) {
    if (err instanceof NotPosted) return false;
    throw err;
  }
  await wakeBatchSession(deps, tenantId, sessionId, message.info.id);
  const events: SessionEvent[] = [
    { type: 'message.updated', message: message.info },
    ...message.parts.map((part): SessionEvent => ({ type: 'part.updated', part })),
    { type: 'session.status', status: 'queued' },
  ];
  try {
    await publishEvents(deps.redis, deps.keys, sessionId, events);
  } catch (err) {
    deps.logger.warn({ err, tenantId, sessionId }, 'event publish failed');
  }
  return true;
}

/** The wake job of a posted message (deterministic id: adding it again is a no-op or a repair). */
export async function wakeBatchSession(
  deps: Jobs,
  tenantId: string,
  sessionId: string,
  messageId: string,
): Promise<void> {
  // A batch item's session is a batch session: the catalogue's session priority is batch.
  await wakeSession(deps.queues, 'message', { sessionId, messageId }, { tenantId, kind: 'batch' });
}
