import type { Db, Trx } from '../client.ts';
import { toJson } from '../tables/columns.ts';

// Idempotency keys: the response of a request is stored with the key in the same transaction
// as the request's writes, so a retried request gets the first response back.

/** The stored response of a key and the hash of the request that made it, or undefined. */
export async function findIdempotentResponse(
  db: Db,
  tenantId: string,
  sessionId: string,
  key: string,
): Promise<{ requestHash: string; response: unknown } | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response'])
    .where('tenant_id', '=', tenantId)
    .where('session_id', '=', sessionId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row ? { requestHash: row.request_hash, response: row.response } : undefined;
}

/** Stores the response; false when the key already existed (the caller lost a race: roll back). */
export async function saveIdempotentResponse(
  trx: Trx,
  input: { tenantId: string; sessionId: string; key: string; requestHash: string; response: unknown },
): Promise<boolean> {
  const rows = await trx
    .insertInto('idempotency_keys')
    .values({
      tenant_id: input.tenantId,
      session_id: input.sessionId,
      key: input.key,
      request_hash: input.requestHash,
      response: toJson(input.response),
    })
    .onConflict((oc) => oc.columns(['tenant_id', 'session_id', 'key']).doNothing())
    .returning('key')
    .execute();
  return rows.length > 0;
}
