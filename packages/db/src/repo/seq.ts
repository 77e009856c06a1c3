import type { Trx } from '../client.ts';
import { NotFoundError } from '../errors.ts';

// Per-session message order. A seq is taken from sessions.last_seq by an UPDATE, which holds the
// session row lock until commit: seq order is commit order within a session, so a reader never
// sees seq N+1 before seq N exists (a user message cannot slip in "behind" an assistant reply).
// Every message insert of a session takes this lock first, which also keeps lock order uniform
// (sessions row, then messages/parts) and rules out deadlocks between gateway and worker.

export async function allocateSeq(trx: Trx, tenantId: string, sessionId: string): Promise<number> {
  const row = await trx
    .updateTable('sessions')
    .set((eb) => ({ last_seq: eb('last_seq', '+', 1) }))
    .where('id', '=', sessionId)
    .where('tenant_id', '=', tenantId)
    .returning('last_seq')
    .executeTakeFirst();
  if (!row) throw new NotFoundError('session', sessionId);
  return row.last_seq;
}
