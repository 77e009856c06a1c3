import type { AssistantMessage, ErrorData, Part, Usage } from '@loopline/core';
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../client.ts';
import { type Fence, staleFenceError } from '../fence.ts';
import { toJson, toJsonOrNull } from '../tables/columns.ts';
import { messageInfo, partData } from './mappers.ts';
import type { SessionProgress } from './sessions.ts';

// Fenced writes as ONE statement, no BEGIN/COMMIT: the first CTE `f` is the fence check and row
// lock (docs/durability.md §3) and every other CTE selects from it, so a stale fence writes nothing.
// A CTE may state the rows it must touch; a mismatch (a bug) fails the whole statement.

export interface FencedCte {
  name: string;
  /** The CTE body; must select from `f`. */
  query: RawBuilder<unknown>;
  /** Rows it must return (RETURNING), else the statement fails and writes nothing. */
  expect?: number;
}

/** The SET clause of a progress patch, after `"updated_at" = now()`. */
function progressSql(patch: SessionProgress): RawBuilder<unknown> {
  const sets: RawBuilder<unknown>[] = [];
  if (patch.stepCount !== undefined) sets.push(sql`, "step_count" = ${patch.stepCount}`);
  if (patch.lastUsage !== undefined) sets.push(sql`, "last_usage" = ${toJsonOrNull(patch.lastUsage)}::jsonb`);
  if (patch.tokenRatio !== undefined) sets.push(sql`, "token_ratio" = ${patch.tokenRatio}`);
  if (patch.tokenRatioWeight !== undefined)
    sets.push(sql`, "token_ratio_weight" = ${patch.tokenRatioWeight}`);
  if (patch.boundarySeq !== undefined || patch.compactionCount !== undefined || patch.title !== undefined)
    throw new TypeError('fencedStatement: unsupported progress field');
  return sql.join(sets, sql``);
}

/** Runs the CTEs under the fence check in one statement; the session's last_seq, or StaleFenceError. */
export async function fencedStatement(
  db: Db,
  f: Fence,
  patch: SessionProgress,
  ctes: readonly FencedCte[],
): Promise<number> {
  const withs = ctes.map((c) => sql`, ${sql.id(c.name)} as (${c.query})`);
  const checks = ctes
    .filter((c) => c.expect !== undefined)
    .map((c) => sql` and (select count(*) from ${sql.id(c.name)}) = ${c.expect}`);
  const { rows } = await sql<{ last_seq: number; ok: number }>`
    with f as (
      update "sessions" set "updated_at" = now()${progressSql(patch)}
      where "id" = ${f.sessionId} and "tenant_id" = ${f.tenantId} and "fence" = ${f.fence}
      returning last_seq
    )${sql.join(withs, sql``)}
    select f.last_seq,
      (case when true${sql.join(checks, sql``)} then '1'
       else 'fenced statement: a row it writes is missing (nothing written)' end)::int as ok
    from f`.execute(db);
  const row = rows[0];
  if (!row) throw await staleFenceError(db, f);
  return row.last_seq;
}

/** New parts of one message, in order (parts.seq follows it), joined to the message row. */
export function insertPartsCte(tenantId: string, parts: readonly Part[]): FencedCte {
  const first = parts[0]!;
  if (parts.some((p) => p.messageId !== first.messageId || p.sessionId !== first.sessionId))
    throw new TypeError('insertPartsCte takes the parts of one message');
  const values = sql.join(
    parts.map(
      (p, i) =>
        sql`(${i}::int, ${p.id}::text, ${p.type}::text, ${toJson(partData(p))}::jsonb, ${p.tokens}::int)`,
    ),
  );
  return {
    name: 'ins_parts',
    query: sql`insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
      select v.id, m.tenant_id, m.session_id, m.id, v.type, v.data, v.tokens
      from f cross join messages m cross join (values ${values}) as v(ord, id, type, data, tokens)
      where m.id = ${first.messageId} and m.tenant_id = ${tenantId} and m.session_id = ${first.sessionId}
      order by v.ord
      on conflict (id) do nothing
      returning id`,
    expect: parts.length,
  };
}

/** Replaces parts' data and tokens (as updatePart, for several parts). */
export function updatePartsCte(tenantId: string, parts: readonly Part[]): FencedCte {
  const values = sql.join(
    parts.map(
      (p) =>
        sql`(${p.id}::text, ${p.sessionId}::text, ${p.messageId}::text, ${p.type}::text, ${toJson(partData(p))}::jsonb, ${p.tokens}::int)`,
    ),
  );
  return {
    name: 'upd_parts',
    query: sql`update parts p set type = v.type, data = v.data, tokens = v.tokens, updated_at = now()
      from f, (values ${values}) as v(id, session_id, message_id, type, data, tokens)
      where p.id = v.id and p.tenant_id = ${tenantId} and p.session_id = v.session_id
        and p.message_id = v.message_id
      returning p.id`,
    expect: parts.length,
  };
}

/** Replaces an assistant message's info (as updateMessageInfo). */
export function updateAssistantInfoCte(tenantId: string, message: AssistantMessage): FencedCte {
  return {
    name: 'upd_message',
    query: sql`update messages set info = ${toJson(messageInfo(message))}::jsonb, updated_at = now()
      from f
      where id = ${message.id} and tenant_id = ${tenantId} and session_id = ${message.sessionId}
        and role = 'assistant'
      returning id`,
    expect: 1,
  };
}

/** Closes a step ledger row (as finishStep, message_id kept). */
export function finishStepCte(
  tenantId: string,
  id: string,
  input: { outcome: string; usage?: Usage | null; responseId?: string | null; error?: ErrorData | null },
): FencedCte {
  return {
    name: 'upd_step',
    query: sql`update steps set outcome = ${input.outcome}, finished_at = now(),
        usage = ${toJsonOrNull(input.usage)}::jsonb, request_id = null,
        response_id = ${input.responseId ?? null}, error = ${toJsonOrNull(input.error)}::jsonb
      from f
      where id = ${id} and tenant_id = ${tenantId}
      returning id`,
    expect: 1,
  };
}
