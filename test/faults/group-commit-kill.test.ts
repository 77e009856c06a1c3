import { randomUUID } from 'node:crypto';
import type { SessionStatus } from '@loopline/core';
import { type AppendAndQueueInput, closeDb, createDb, isConnectionError, loadHistory } from '@loopline/db';
import { sql } from 'kysely';
import { describe, expect } from 'vitest';
import { AppendBatcher } from '../../apps/gateway/src/lib/append-batch.ts';
import { pgTest as test } from '../../packages/testkit/src/fixtures.ts';
import { makeSessions } from '../../packages/testkit/src/index.ts';

// The gateway's group commit (docs/decisions.md D39) while PostgreSQL backends are terminated
// under it, again and again: a batch statement then fails mid-flight with the connection's error.
// One statement is one transaction, and a batch whose connection failed is never written again
// (nobody can tell whether it committed), so: every message answered as written is stored, none
// twice, and each session's seqs run 1..n without a gap.

const RULES = { wakeFrom: ['idle', 'error'] as SessionStatus[], midRunIn: ['running'] as SessionStatus[] };

function text(tenantId: string, sessionId: string, body: string): AppendAndQueueInput {
  return { tenantId, sessionId, parts: [{ type: 'text', text: body, tokens: 1 }], ...RULES };
}

describe('group commit under terminated backends', () => {
  test('backends killed under it: every accepted message stored once, nothing doubled, seqs unbroken', async ({
    pg,
  }) => {
    const { tenantId, ids } = await makeSessions(pg.db, 20);
    const name = `append-fault-${randomUUID().slice(0, 8)}`;
    const db = createDb(pg.url, { max: 4, applicationName: name });
    const batcher = new AppendBatcher(db, { concurrency: 2, maxBatch: 64 });
    let stop = false;
    let killed = 0;
    // Terminate this pool's backends again and again while the messages go in: a statement then
    // fails mid-flight (57P01), whichever batch it carried.
    const killer = (async () => {
      while (!stop) {
        const { rows } = await sql<{ n: number }>`
          select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
          where application_name = ${name}`.execute(pg.db);
        killed += rows[0]?.n ?? 0;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    const sent: Array<{ sessionId: string; body: string; result: Promise<unknown> }> = [];
    const send = (id: string, body: string) => {
      const result = batcher.append(text(tenantId, id, body));
      result.catch(() => undefined); // looked at below, once all have settled
      sent.push({ sessionId: id, body, result });
    };
    for (let round = 0; round < 10; round++) {
      for (const id of ids) send(id, `${id}-${round}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await Promise.allSettled(sent.map((m) => m.result));
    stop = true;
    await killer;
    // The pool recovers: with the storm over, one more message to every session is written.
    for (const id of ids) send(id, `${id}-after`);
    const settled = await Promise.allSettled(sent.map((m) => m.result));
    await closeDb(db);
    for (const id of ids)
      expect(settled[sent.findIndex((m) => m.body === `${id}-after`)]!.status).toBe('fulfilled');
    const accepted = new Set(sent.filter((_, i) => settled[i]!.status === 'fulfilled').map((m) => m.body));
    for (const s of settled) if (s.status === 'rejected') expect(isConnectionError(s.reason)).toBe(true);
    expect(killed).toBeGreaterThan(0);
    for (const id of ids) {
      const history = await loadHistory(pg.db, tenantId, id);
      const bodies = history.map((m) => (m.parts[0]?.type === 'text' ? m.parts[0].text : ''));
      // Nothing doubled, seqs 1..n without a gap (each message's own seq, as alone).
      expect(new Set(bodies).size).toBe(bodies.length);
      expect(history.map((m) => m.info.seq)).toEqual(bodies.map((_, i) => i + 1));
      // Every message answered as written is there; one that got the connection's error may or
      // may not be (nobody can tell whether its statement committed), never twice.
      for (const body of accepted) if (body.startsWith(`${id}-`)) expect(bodies).toContain(body);
    }
  });
});
