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
  // INSERT … SELECT from the message row: a part only joins a message of its tenant and session.
  // Only a conflict (or a missing message) needs the second statement below.
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

/**
 * insertPart for several new parts of one message, in one statement and in order (parts.seq
 * follows it); NotFoundError for an unknown message or an id that existed (replay: insertPart).
 */
export async function insertParts(trx: Trx, tenantId: string, parts: readonly Part[]): Promise<void> {
  if (parts.length === 0) return;
  if (parts.length === 1) {
    await insertPart(trx, tenantId, parts[0]!);
    return;
  }
  const messageId = parts[0]!.messageId;
  const sessionId = parts[0]!.sessionId;
  if (parts.some((p) => p.messageId !== messageId || p.sessionId !== sessionId))
    throw new TypeError('insertParts takes the parts of one message');
  const values = sql.join(
    parts.map(
      (p, i) =>
        sql`(${i}::int, ${p.id}::text, ${p.type}::text, ${toJson(partData(p))}::jsonb, ${p.tokens}::int)`,
    ),
  );
  const { rows } = await sql<{ id: string }>`
    insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
    select v.id, m.tenant_id, m.session_id, m.id, v.type, v.data, v.tokens
    from messages m cross join (values ${values}) as v(ord, id, type, data, tokens)
    where m.id = ${messageId} and m.tenant_id = ${tenantId} and m.session_id = ${sessionId}
    order by v.ord
    on conflict (id) do nothing
    returning id`.execute(trx);
  if (rows.length !== parts.length) throw new NotFoundError('message', messageId);
}
