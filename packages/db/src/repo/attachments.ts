import { sql } from 'kysely';
import type { Db } from '../client.ts';

// Attachments: the bytes the worker fetched (through the egress gate) for a message's file part,
// so a URL is fetched once and every later step sends the same bytes. Written once per part.

export interface AttachmentRecord {
  partId: string;
  mime: string;
  data: Buffer;
}

/** The stored size in bytes of those parts, by part id (parts never fetched are absent). */
export async function attachmentSizes(
  db: Db,
  tenantId: string,
  partIds: readonly string[],
): Promise<Map<string, number>> {
  if (partIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('attachments')
    .select(['part_id', sql<number>`octet_length(data)`.as('bytes')])
    .where('tenant_id', '=', tenantId)
    .where('part_id', 'in', [...partIds])
    .execute();
  return new Map(rows.map((r) => [r.part_id, Number(r.bytes)]));
}

/** The stored bytes of those parts, by part id (parts never fetched are absent). */
export async function loadAttachments(
  db: Db,
  tenantId: string,
  partIds: readonly string[],
): Promise<Map<string, AttachmentRecord>> {
  if (partIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('attachments')
    .select(['part_id', 'mime', 'data'])
    .where('tenant_id', '=', tenantId)
    .where('part_id', 'in', [...partIds])
    .execute();
  return new Map(rows.map((r) => [r.part_id, { partId: r.part_id, mime: r.mime, data: r.data }]));
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
