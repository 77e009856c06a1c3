import type { Part } from '@loopline/core';
import { sql } from 'kysely';
import type { Trx } from '../client.ts';
import { NotFoundError } from '../errors.ts';
import { toJson } from '../tables/columns.ts';
import { partData, toPart } from './mappers.ts';

// Parts: inserted once (id given by the caller, so a retry finds its row) and then replaced as
// they move forward (tool state, final text, prune's time.compacted). Never deleted.

/** Inserts a part of a message of this tenant and session; an existing id is kept and returned. */
export async function insertPart(trx: Trx, tenantId: string, part: Part): Promise<Part> {
  // INSERT … SELECT from the message row: a part can only join a message of the same tenant and session.
  // RETURNING gives the new row in the same round trip; only a conflict (or a missing message)
  // needs the second statement below.
  const inserted = await trx
    .insertInto('parts')
    .columns(['id', 'tenant_id', 'session_id', 'message_id', 'type', 'data', 'tokens'])
    .expression((eb) =>
      eb
        .selectFrom('messages')
        .select([
          eb.val(part.id).as('id'),
          'tenant_id',
          'session_id',
          'id as message_id',
          eb.val(part.type).as('type'),
          sql<string>`${toJson(partData(part))}::jsonb`.as('data'),
          eb.val(part.tokens).as('tokens'),
        ])
        .where('id', '=', part.messageId)
        .where('tenant_id', '=', tenantId)
        .where('session_id', '=', part.sessionId),
    )
    .onConflict((oc) => oc.column('id').doNothing())
    .returning(['id', 'session_id', 'message_id', 'data', 'tokens'])
    .executeTakeFirst();
  if (inserted) return toPart(inserted);
  const row = await trx
    .selectFrom('parts')
    .select(['id', 'session_id', 'message_id', 'data', 'tokens'])
    .where('id', '=', part.id)
    .where('tenant_id', '=', tenantId)
    .where('session_id', '=', part.sessionId)
    .executeTakeFirst();
  if (!row) throw new NotFoundError('message', part.messageId);
  return toPart(row);
}

/** Replaces a part's data and tokens. Forward-only transitions are the caller's responsibility. */
export async function updatePart(trx: Trx, tenantId: string, part: Part): Promise<void> {
  const result = await trx
    .updateTable('parts')
    .set({ type: part.type, data: toJson(partData(part)), tokens: part.tokens, updated_at: sql<Date>`now()` })
    .where('id', '=', part.id)
    .where('tenant_id', '=', tenantId)
    .where('session_id', '=', part.sessionId)
    .where('message_id', '=', part.messageId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw new NotFoundError('part', part.id);
}
