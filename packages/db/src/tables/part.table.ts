import type { Part } from '@loopline/core';
import type { Generated, GeneratedAlways, Insertable, Selectable } from 'kysely';
import type { CreatedAt, DistributiveOmit, Json } from './columns.ts';

// parts: the ordered content of a message. `data` is the zod Part minus the fields that live
// in columns (id, sessionId, messageId, tokens). Rows are never deleted.

export type PartData = DistributiveOmit<Part, 'id' | 'sessionId' | 'messageId' | 'tokens'>;

export interface PartTable {
  id: string;
  tenant_id: string;
  session_id: string;
  message_id: string;
  seq: GeneratedAlways<number>;
  type: Part['type'];
  data: Json<PartData>;
  tokens: Generated<number>;
  /** History revision, stamped by a trigger on every insert and update (migration 0011). */
  rev: Generated<number>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}
export type PartRow = Selectable<PartTable>;
export type NewPartRow = Insertable<PartTable>;
