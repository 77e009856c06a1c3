import type { Insertable, Selectable } from 'kysely';
import type { CreatedAt, Json } from './columns.ts';

// idempotency_keys: the stored response of a request made with an Idempotency-Key header.

export interface IdempotencyKeyTable {
  tenant_id: string;
  session_id: string;
  key: string;
  /** Hash of the request body: the same key with another body is a conflict. */
  request_hash: string;
  response: Json<unknown>;
  created_at: CreatedAt;
}
export type IdempotencyKeyRow = Selectable<IdempotencyKeyTable>;
export type NewIdempotencyKeyRow = Insertable<IdempotencyKeyTable>;
