import { sql } from 'kysely';
import type { Db } from '../client.ts';

// Attachments: the bytes the worker fetched (through the egress gate) for a message's file part,
// so a URL is fetched once and every later step sends the same bytes. Written once per part.

export interface AttachmentRecord {
  partId: string;
  mime: string;
  data: Buffer;
}

/**
 * The stored bytes of those parts, by part id (parts never fetched are absent), in one statement
 * that reads them only if together they come to at most `maxBytes`: `total` is their size either
 * way, `records` is absent past it (no byte of them was sent).
 */
export async function loadAttachmentsWithin(
  db: Db,
  tenantId: string,
  partIds: readonly string[],
  maxBytes: number,
): Promise<{ total: number; records?: Map<string, AttachmentRecord> }> {
  if (partIds.length === 0) return { total: 0, records: new Map() };
  const { rows } = await sql<{ part_id: string; mime: string; data: Buffer | null; total: string }>`
    with a as (
      select part_id, mime, data from attachments
      where tenant_id = ${tenantId} and part_id = any(${[...partIds]}::text[])
    ),
    s as (select coalesce(sum(octet_length(data)), 0) as total from a)
    select a.part_id, a.mime, case when s.total <= ${maxBytes} then a.data end as data, s.total::text as total
    from a cross join s`.execute(db);
  const total = Number(rows[0]?.total ?? 0);
  if (total > maxBytes) return { total };
  return {
    total,
    records: new Map(rows.map((r) => [r.part_id, { partId: r.part_id, mime: r.mime, data: r.data! }])),
  };
}

/** Stores fetched bytes; a part fetched twice (two racing workers) keeps the first copy. */
export async function saveAttachment(
  db: Db,
  a: { tenantId: string; sessionId: string; partId: string; mime: string; data: Buffer },
): Promise<void> {
  await db
    .insertInto('attachments')
    .values({
      tenant_id: a.tenantId,
      session_id: a.sessionId,
      part_id: a.partId,
      mime: a.mime,
      size: a.data.length,
      data: a.data,
    })
    .onConflict((oc) => oc.columns(['tenant_id', 'part_id']).doNothing())
    .execute();
}
