import type { Part } from '@loopline/core';
import { partData } from './mappers.ts';

// The parts of a batch statement's messages (the group commits' append and step-start batches):
// each input row carries its message's new parts as a jsonb array, and one CTE inserts them for
// the messages the statement inserted, in order within each message (parts.seq is insert order).

/** A message's new parts as the batch statements' `parts` jsonb array. */
export function batchParts(
  parts: readonly Part[],
): Array<{ id: string; type: string; data: unknown; tokens: number }> {
  return parts.map((part) => ({ id: part.id, type: part.type, data: partData(part), tokens: part.tokens }));
}

/**
 * The insert of those parts, for a statement with an `input` CTE (`message_id`, `tenant_id`,
 * `session_id`, `parts`) and a CTE `m` returning the ids of the messages it inserted.
 */
export const BATCH_PARTS_INSERT = `insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
      select e.v->>'id', i.tenant_id, i.session_id, m.id, e.v->>'type', e.v->'data', (e.v->>'tokens')::int
      from m join input i on i.message_id = m.id
      cross join lateral jsonb_array_elements(i.parts) with ordinality as e(v, ord)
      order by i.session_id, e.ord
      returning id`;
