import type { SessionStatus } from '@loopline/core';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeAgent, makeSession, makeSessionWithTenant } from '../../testkit/src/index.ts';
import {
  type AppendAndQueueInput,
  appendUserMessageAndQueue,
  appendUserMessagesAndQueue,
  getSession,
  loadHistory,
  setSessionStatus,
} from '../src/index.ts';

// Several sessions' user messages in one statement (the gateway's group commit): per message the
// outcome of appendUserMessageAndQueue, with the tenant of each message checked on its own.

const RULES = { wakeFrom: ['idle', 'error'], midRunIn: ['running', 'compacting', 'waiting'] } satisfies Pick<
  AppendAndQueueInput,
  'wakeFrom' | 'midRunIn'
> as { wakeFrom: SessionStatus[]; midRunIn: SessionStatus[] };

function message(tenantId: string, sessionId: string, text: string): AppendAndQueueInput {
  return {
    tenantId,
    sessionId,
    parts: [
      { type: 'text', text, tokens: 3 },
      { type: 'file', url: 'https://example.com/a.png', mime: 'image/png', tokens: 0 },
    ],
    ...RULES,
  };
}

describe('appendUserMessagesAndQueue', () => {
  test('each message as the single statement writes it: seq, wake-up, mid-run, parts in order', async ({
    pg,
  }) => {
    const { tenant, agent, session: idle } = await makeSessionWithTenant(pg.db);
    const running = await makeSession(pg.db, tenant.id, { agent });
    const busy = await makeSession(pg.db, tenant.id, { agent });
    await setSessionStatus(pg.db, tenant.id, running.id, 'running');
    // One earlier message, so the batch's seq is last_seq + 1 and not 1.
    await appendUserMessageAndQueue(pg.db, message(tenant.id, busy.id, 'earlier'));

    const results = await appendUserMessagesAndQueue(pg.db, [
      message(tenant.id, idle.id, 'to idle'),
      message(tenant.id, running.id, 'to running'),
      message(tenant.id, busy.id, 'to queued'),
    ]);

    expect(results.map((r) => r?.session.id)).toEqual([idle.id, running.id, busy.id]);
    expect(results[0]).toMatchObject({ statusChanged: true, session: { status: 'queued', lastSeq: 1 } });
    expect(results[0]!.message.info).not.toHaveProperty('midRun');
    expect(results[1]).toMatchObject({ statusChanged: false, session: { status: 'running', lastSeq: 1 } });
    expect(results[1]!.message.info).toMatchObject({ seq: 1, midRun: true, agent: agent.name });
    expect(results[2]).toMatchObject({ statusChanged: false, session: { status: 'queued', lastSeq: 2 } });
    for (const [i, s] of [idle, running, busy].entries()) {
      const history = await loadHistory(pg.db, tenant.id, s.id);
      // What the statement stored is what it answered (ids, info, parts and their order).
      expect(history.at(-1)).toEqual(results[i]!.message);
      expect(history.at(-1)!.parts.map((p) => p.type)).toEqual(['text', 'file']);
      expect((await getSession(pg.db, tenant.id, s.id))?.lastSeq).toBe(history.length);
    }
  });

  test("a message to another tenant's session (or none) writes nothing and is undefined", async ({ pg }) => {
    const mine = await makeSessionWithTenant(pg.db);
    const theirs = await makeSessionWithTenant(pg.db);
    const results = await appendUserMessagesAndQueue(pg.db, [
      message(mine.tenant.id, mine.session.id, 'mine'),
      // My tenant naming their session: refused, as with the single statement.
      message(mine.tenant.id, theirs.session.id, 'not mine'),
      message(mine.tenant.id, 'ses_missing', 'nobody'),
    ]);
    expect(results[0]?.session.lastSeq).toBe(1);
    expect(results[1]).toBeUndefined();
    expect(results[2]).toBeUndefined();
    expect(await loadHistory(pg.db, theirs.tenant.id, theirs.session.id)).toEqual([]);
    expect((await getSession(pg.db, theirs.tenant.id, theirs.session.id))?.status).toBe('idle');
  });

  test('one message per session and one set of wake rules per batch', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const other = await makeSession(pg.db, tenant.id, { agent: await makeAgent(pg.db, tenant.id) });
    await expect(
      appendUserMessagesAndQueue(pg.db, [
        message(tenant.id, session.id, 'a'),
        message(tenant.id, session.id, 'b'),
      ]),
    ).rejects.toThrow(/one message per session/);
    await expect(
      appendUserMessagesAndQueue(pg.db, [
        message(tenant.id, session.id, 'a'),
        { ...message(tenant.id, other.id, 'b'), wakeFrom: ['idle'] },
      ]),
    ).rejects.toThrow(/shares wakeFrom/);
    expect(await loadHistory(pg.db, tenant.id, session.id)).toEqual([]);
  });
});
