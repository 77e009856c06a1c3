import { sql } from 'kysely';
import type { Db, Trx } from '../client.ts';

// Full text of tool outputs truncated at ingest (docs/context.md §3.1), read by the read_output tool.
// Expiry is computed from the database clock; an expired output reads as absent.

export interface SaveToolOutputInput {
  /** newId('out'); a retried step that saves the same id again is a no-op. */
  id: string;
  tenantId: string;
  sessionId: string;
  partId: string;
  callId: string;
  content: string;
  retentionDays: number;
}

export interface ToolOutput {
  content: string;
  lines: number;
  bytes: number;
}

/** Lines as a reader counts them: a trailing newline does not start another line. */
export function countLines(content: string): number {
  if (content === '') return 0;
  let lines = 1;
  for (let i = content.indexOf('\n'); i !== -1; i = content.indexOf('\n', i + 1)) lines++;
  return content.endsWith('\n') ? lines - 1 : lines;
}

/** Stores a cut output's full text until its retention ends; the same id twice is a no-op. */
export async function saveToolOutput(trx: Trx, input: SaveToolOutputInput): Promise<void> {
  await trx
    .insertInto('tool_outputs')
    .values({
      id: input.id,
      tenant_id: input.tenantId,
      session_id: input.sessionId,
      part_id: input.partId,
      call_id: input.callId,
      content: input.content,
      lines: countLines(input.content),
      bytes: Buffer.byteLength(input.content, 'utf8'),
      expires_at: sql<Date>`now() + make_interval(days => ${input.retentionDays}::int)`,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/** A stored output of the session, or undefined when unknown or expired. */
export async function readToolOutput(
  db: Db,
  tenantId: string,
  sessionId: string,
  outputId: string,
): Promise<ToolOutput | undefined> {
  const row = await db
    .selectFrom('tool_outputs')
    .select(['content', 'lines', 'bytes'])
    .where('id', '=', outputId)
    .where('tenant_id', '=', tenantId)
    .where('session_id', '=', sessionId)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return row ? { content: row.content, lines: row.lines, bytes: row.bytes } : undefined;
}
