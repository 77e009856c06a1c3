import type { Message } from '@loopline/core';
import type { Generated, Insertable, Selectable } from 'kysely';
import type { CreatedAt, DistributiveOmit, Json } from './columns.ts';

// messages: the append-only log of a session. `info` is the zod Message minus the fields that
// live in columns (id, sessionId, seq, reverted).

export type MessageInfo = DistributiveOmit<Message, 'id' | 'sessionId' | 'seq' | 'reverted'>;

export interface MessageTable {
  id: string;
  tenant_id: string;
  session_id: string;
  /** Allocated from sessions.last_seq. */
  seq: number;
  role: Message['role'];
  info: Json<MessageInfo>;
  reverted: Generated<boolean>;
  /** History revision, stamped by a trigger on every insert and update (migration 0011). */
  rev: Generated<number>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}
export type MessageRow = Selectable<MessageTable>;
export type NewMessageRow = Insertable<MessageTable>;
