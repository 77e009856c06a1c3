import type { Message, Part, WithParts } from '@loopline/core';
import type { Db } from '@loopline/db';
import { sql } from 'kysely';

// Writes a built history (lib/trajectories.ts) into a session with multi-row INSERTs: the rows
// the worker would have written (messages.info without id/sessionId/seq/reverted, parts.data
// without id/sessionId/messageId/tokens), ids made unique per session.

function info(m: Message): string {
  const { id: _i, sessionId: _s, seq: _q, reverted: _r, ...rest } = m;
  return JSON.stringify(rest);
}

function data(p: Part): string {
  const { id: _i, sessionId: _s, messageId: _m, tokens: _t, ...rest } = p;
  return JSON.stringify(rest);
}

/** Writes a built history into a session; the messages as stored. */
export async function insertHistory(
  db: Db,
  tenantId: string,
  sessionId: string,
  history: readonly WithParts[],
): Promise<WithParts[]> {
  const suffix = sessionId.slice(-8);
  const msgId = (id: string) => `${id}_${suffix}`;
  const out: WithParts[] = history.map((m) => ({
    info: {
      ...m.info,
      id: msgId(m.info.id),
      sessionId,
      ...(m.info.role === 'assistant' ? { parentId: msgId(m.info.parentId) } : {}),
    } as Message,
    parts: m.parts.map((p) => ({ ...p, id: msgId(p.id), sessionId, messageId: msgId(p.messageId) })),
  }));
  for (let i = 0; i < out.length; i += 200) {
    const batch = out.slice(i, i + 200);
    await db
      .insertInto('messages')
      .values(
        batch.map((m) => ({
          id: m.info.id,
          tenant_id: tenantId,
          session_id: sessionId,
          seq: m.info.seq,
          role: m.info.role,
          info: info(m.info),
        })),
      )
      .execute();
    const parts = batch.flatMap((m) => m.parts);
    for (let j = 0; j < parts.length; j += 500) {
      await db
        .insertInto('parts')
        .values(
          parts.slice(j, j + 500).map((p) => ({
            id: p.id,
            tenant_id: tenantId,
            session_id: sessionId,
            message_id: p.messageId,
            type: p.type,
            data: data(p),
            tokens: p.tokens,
          })),
        )
        .execute();
    }
  }
  await sql`update sessions set last_seq = ${out.length}::int where id = ${sessionId}`.execute(db);
  return out;
}
