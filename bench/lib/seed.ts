import type { Db } from '@loopline/db';
import { sql } from 'kysely';

// Bulk history for the load figures, written with generate_series (minutes of appends become
// seconds). Turns alternate: a user message (one text part) and an assistant reply (step-start,
// text, a completed read_output call with ~1 KB of output, step-finish with usage). A completed
// compaction boundary (marker + summary) sits `recent` messages from the end, and the session's
// boundary_seq points at it, as the worker leaves it after a compaction.

const USAGE = `jsonb_build_object('input', 1000, 'output', 50, 'reasoning', 0,
  'cache', jsonb_build_object('read', 0, 'write', 0), 'total', 1050)`;

/** Seeds a session with `messages` messages and a boundary `recent` from the end. */
export async function seedHistory(
  db: Db,
  opts: { tenantId: string; sessionId: string; messages: number; recent: number },
): Promise<{ boundarySeq: number }> {
  const { tenantId: tid, sessionId: sid, messages: n } = opts;
  // The marker must be a user position (odd seq) so that its summary is the assistant after it.
  let b = n - opts.recent + 1;
  if (b % 2 === 0) b--;
  const id = (g: string) => sql.raw(`'${sid}_m' || ${g}`);
  await sql`
    insert into messages (id, tenant_id, session_id, seq, role, info)
    select ${id('g')}, ${tid}, ${sid}, g,
      case when g % 2 = 1 then 'user' else 'assistant' end,
      case
        when g = ${b}::int then jsonb_build_object('role', 'user', 'agent', 'bench', 'synthetic', true,
          'time', jsonb_build_object('created', g))
        when g = ${b + 1}::int then jsonb_build_object('role', 'assistant', 'parentId', ${id('(g - 1)')},
          'summary', true, 'finish', 'stop', 'model', 'compatible/mock', 'agent', 'bench',
          'time', jsonb_build_object('created', g, 'completed', g))
        when g % 2 = 1 then jsonb_build_object('role', 'user', 'agent', 'bench', 'time', jsonb_build_object('created', g))
        else jsonb_build_object('role', 'assistant', 'parentId', ${id('(g - 1)')}, 'finish', 'tool-calls',
          'model', 'compatible/mock', 'agent', 'bench', 'step', g / 2,
          'time', jsonb_build_object('created', g, 'completed', g), 'usage', ${sql.raw(USAGE)})
      end
    from generate_series(1, ${n}::int) g`.execute(db);

  const part = (k: number, where: string, type: string, data: string, tokens: number) =>
    sql`
      insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
      select ${sid} || '_p' || g || '_' || ${k}::int, ${tid}, ${sid}, ${id('g')}, ${type}, ${sql.raw(data)}, ${tokens}::int
      from generate_series(1, ${n}::int) g where ${sql.raw(where)} order by g`.execute(db);
  const odd = `g % 2 = 1 and g <> ${b}`;
  const even = `g % 2 = 0 and g <> ${b + 1}`;
  await part(
    1,
    odd,
    'text',
    `jsonb_build_object('type', 'text', 'text', 'Request ' || g || ': ' || repeat('please look into the failing build and explain what changed. ', 3))`,
    45,
  );
  await part(
    1,
    `g = ${b}`,
    'compaction',
    `jsonb_build_object('type', 'compaction', 'auto', true, 'overflow', false)`,
    9,
  );
  await part(
    1,
    `g = ${b + 1}`,
    'text',
    `jsonb_build_object('type', 'text', 'text', '## Goal' || chr(10) || repeat('The user works on the build; tests were fixed. ', 40))`,
    400,
  );
  await part(1, even, 'step-start', `jsonb_build_object('type', 'step-start')`, 0);
  await part(
    2,
    even,
    'text',
    `jsonb_build_object('type', 'text', 'text', repeat('The quick brown fox jumps over the lazy dog ' || g || '. ', 7))`,
    70,
  );
  await part(
    3,
    even,
    'tool',
    `jsonb_build_object('type', 'tool', 'callId', 'call_' || g, 'tool', 'read_output', 'outputTokens', 250,
      'state', jsonb_build_object('status', 'completed', 'input', jsonb_build_object('outputId', 'out_' || g),
        'output', repeat('line ' || g || ' of the tool output with a few numbers 12345 67890' || chr(10), 20),
        'title', '', 'metadata', '{}'::jsonb, 'time', jsonb_build_object('start', g, 'end', g)))`,
    262,
  );
  await part(
    4,
    even,
    'step-finish',
    `jsonb_build_object('type', 'step-finish', 'reason', 'tool-calls', 'usage', ${USAGE})`,
    0,
  );
  await sql`update sessions set last_seq = ${n}::int, boundary_seq = ${b}::int where id = ${sid}`.execute(db);
  return { boundarySeq: b };
}
