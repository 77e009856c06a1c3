import { newId } from '@loopline/core';
import type { Db } from '@loopline/db';
import type { KeySpace } from '@loopline/queue';
import { makeAgent, makeSession, makeTenant } from '@loopline/testkit';
import type { Redis } from 'ioredis';
import { sql } from 'kysely';

// The bare durable step: the least a durable agent step has to do, written by hand against the
// real tables (sessions, messages, parts, with their indexes) and no Loopline code on the path.
// Run by a BullMQ job of lib/bare-chain.ts that holds the session's Redis lock (SET NX PX); then
//   1. fence bump: UPDATE sessions SET fence = fence + 1 … RETURNING fence (the new lock holder's
//      token; autocommit);
//   2. one transaction writing the step: a single statement (as Loopline's own fenced writes)
//      whose first CTE is the fenced UPDATE of the session row taking the next seq (zero rows = a
//      newer holder: nothing written), then the assistant message and its three parts (text, a
//      completed tool call, step-finish with usage);
//   3. one event publish: XADD (MAXLEN ~ 10,000) to the session's event stream;
// and the job hop (release the lock, add the next job, finish this one). That is: 2 PostgreSQL
// round trips and, besides BullMQ's own, 3 Redis commands (lock, XADD, release).

export interface DurableSession {
  tenantId: string;
  sessionId: string;
}

/** `count` sessions of one tenant and agent, made with the test factories (real rows). */
export async function durableSessions(db: Db, count: number, parallel = 8): Promise<DurableSession[]> {
  const { tenant } = await makeTenant(db);
  const agent = await makeAgent(db, tenant.id, { name: 'bench-durable' });
  const out: DurableSession[] = [];
  let left = count;
  const lane = async () => {
    while (left > 0) {
      left--;
      const s = await makeSession(db, tenant.id, { agent });
      out.push({ tenantId: tenant.id, sessionId: s.id });
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, lane));
  return out;
}

const USAGE = { input: 1000, output: 50, reasoning: 0, cache: { read: 0, write: 0 }, total: 1050 };
const TOOL_OUTPUT = 'line of the tool output with a few numbers 12345 67890\n'.repeat(4);

/** One durable step for chain `chain` (session `sessions[chain]`), step `step`. */
export function durableWork(db: Db, redis: Redis, keys: KeySpace, sessions: readonly DurableSession[]) {
  return async (chain: number, step: number): Promise<void> => {
    const { tenantId, sessionId } = sessions[chain]!;
    const bumped = await sql<{ fence: number }>`
      update sessions set fence = fence + 1, updated_at = now()
      where id = ${sessionId} and tenant_id = ${tenantId} returning fence`.execute(db);
    const fence = bumped.rows[0]?.fence;
    if (fence === undefined) throw new Error(`durable step: no session ${sessionId}`);
    const now = Date.now();
    const messageId = newId('msg');
    const info = {
      role: 'assistant',
      parentId: 'msg_parent',
      model: 'compatible/mock',
      agent: 'bench-durable',
      step,
      finish: 'tool-calls',
      time: { created: now, completed: now },
      usage: USAGE,
    };
    const parts = [
      { id: newId('prt'), type: 'text', data: { type: 'text', text: 'Checking.' }, tokens: 3 },
      {
        id: newId('prt'),
        type: 'tool',
        data: {
          type: 'tool',
          callId: `call_${step}`,
          tool: 'read_output',
          state: {
            status: 'completed',
            input: { outputId: 'out_bench' },
            output: TOOL_OUTPUT,
            title: '',
            metadata: {},
            time: { start: now, end: now },
          },
        },
        tokens: 60,
      },
      {
        id: newId('prt'),
        type: 'step-finish',
        data: { type: 'step-finish', reason: 'tool-calls', usage: USAGE },
        tokens: 0,
      },
    ];
    const values = sql.join(
      parts.map(
        (p, i) =>
          sql`(${i}::int, ${p.id}::text, ${p.type}::text, ${JSON.stringify(p.data)}::jsonb, ${p.tokens}::int)`,
      ),
    );
    // One statement, its own transaction: the fence check and seq (first CTE), the message, its parts.
    const { rows } = await sql<{ id: string }>`
      with s as (
        update sessions set last_seq = last_seq + 1, updated_at = now()
        where id = ${sessionId} and tenant_id = ${tenantId} and fence = ${fence}
        returning tenant_id, id, last_seq
      ), m as (
        insert into messages (id, tenant_id, session_id, seq, role, info)
        select ${messageId}, s.tenant_id, s.id, s.last_seq, 'assistant', ${JSON.stringify(info)}::jsonb from s
        returning id
      )
      insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
      select v.id, ${tenantId}, ${sessionId}, m.id, v.type, v.data, v.tokens
      from m cross join (values ${values}) as v(ord, id, type, data, tokens)
      order by v.ord
      returning id`.execute(db);
    if (rows.length === 0) throw new Error(`durable step: stale fence ${fence} on ${sessionId}`);
    await redis.xadd(
      keys.events(sessionId),
      'MAXLEN',
      '~',
      10_000,
      '*',
      'e',
      JSON.stringify({ type: 'message.updated', message: { id: messageId, sessionId, ...info } }),
    );
  };
}
