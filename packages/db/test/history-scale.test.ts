import { WithParts } from '@loopline/core';
import { sql } from 'kysely';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSessionWithTenant } from '../../testkit/src/index.ts';
import { appendUserMessage, loadHistory } from '../src/index.ts';
import { historyQuery, partsQuery } from '../src/repo/history.ts';

// loadHistory from a recent boundary stays fast at 100,000 messages: both queries are index
// range scans, never a scan of the whole session.

const MESSAGES = 100_000;

async function plan(query: { explain(): Promise<Record<string, unknown>[]> }): Promise<string> {
  return (await query.explain()).map((row) => String(row['QUERY PLAN'])).join('\n');
}

describe('history at scale', () => {
  let fixture: Awaited<ReturnType<typeof makeSessionWithTenant>>;

  // A session with 100,000 messages of two parts each, and a smaller neighbour in the same tables.
  test.beforeAll(async ({ pg }) => {
    fixture = await makeSessionWithTenant(pg.db);
    const other = await makeSessionWithTenant(pg.db);
    for (const [{ tenant, session }, count] of [
      [fixture, MESSAGES],
      [other, MESSAGES / 10],
    ] as const) {
      await sql`
        insert into messages (id, tenant_id, session_id, seq, role, info)
        select ${session.id} || '_m' || g, ${tenant.id}, ${session.id}, g, 'user',
               jsonb_build_object('role', 'user', 'agent', 'build', 'time', jsonb_build_object('created', g))
        from generate_series(1, ${count}::int) g`.execute(pg.db);
      await sql`
        insert into parts (id, tenant_id, session_id, message_id, type, data, tokens)
        select ${session.id} || '_p' || g || '_' || k, ${tenant.id}, ${session.id}, ${session.id} || '_m' || g, 'text',
               jsonb_build_object('type', 'text', 'text', 'message ' || g || ' part ' || k), 3
        from generate_series(1, ${count}::int) g, generate_series(1, 2) k
        order by g, k`.execute(pg.db);
      await sql`update sessions set last_seq = ${count}::int where id = ${session.id}`.execute(pg.db);
    }
    await sql`analyze messages`.execute(pg.db);
    await sql`analyze parts`.execute(pg.db);
  }, 120_000);

  test('the tail loads with index range scans, in milliseconds', async ({ pg }) => {
    const { tenant, session } = fixture;
    const appended = await appendUserMessage(pg.db, {
      tenantId: tenant.id,
      sessionId: session.id,
      agent: 'build',
      parts: [{ type: 'text', text: 'newest', tokens: 1 }],
    });
    expect(appended.info.seq).toBe(MESSAGES + 1);

    const fromSeq = MESSAGES - 48;
    const messagesPlan = await plan(historyQuery(pg.db, tenant.id, session.id, { fromSeq }));
    expect(messagesPlan).toContain('messages_session_seq_idx');
    expect(messagesPlan).not.toMatch(/Seq Scan/);
    const ids = Array.from({ length: 50 }, (_, i) => `${session.id}_m${fromSeq + i}`);
    const partsPlan = await plan(partsQuery(pg.db, tenant.id, session.id, ids));
    expect(partsPlan).toContain('parts_message_idx');
    expect(partsPlan).not.toMatch(/Seq Scan/);

    // The plans above are the proof that the cost does not grow with the session (no timing
    // assertion: a loaded machine would make one flaky; bench/figures/history.ts measures it).
    const tail = await loadHistory(pg.db, tenant.id, session.id, { fromSeq });
    expect(tail.map((m) => m.info.seq)).toEqual(Array.from({ length: 50 }, (_, i) => fromSeq + i));
    expect(tail.slice(0, -1).every((m) => m.parts.length === 2)).toBe(true);
    expect(tail.at(-1)?.parts.map((p) => (p as { text: string }).text)).toEqual(['newest']);
    for (const m of tail) WithParts.parse(m);
  });

  test('the whole session still loads in two queries', { timeout: 60_000 }, async ({ pg }) => {
    const { tenant, session } = fixture;
    // Its time is measured by bench/figures/history.ts, not here.
    const all = await loadHistory(pg.db, tenant.id, session.id);
    expect(all).toHaveLength(MESSAGES + 1);
    expect(all[0]?.parts).toHaveLength(2);
  });
});
