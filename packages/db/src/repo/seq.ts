import type { Trx } from '../client.ts';
import { NotFoundError } from '../errors.ts';

// Per-session message order: a seq comes from sessions.last_seq by an UPDATE holding the row lock
// until commit, so seq order is commit order (no message slips in "behind" a reply), and every
// insert locks the session row first (one lock order, no gateway/worker deadlocks).

/** Takes the session's next message seq (row-locked until commit); NotFoundError for no session. */
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
