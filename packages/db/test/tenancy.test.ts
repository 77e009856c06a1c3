import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSessionWithTenant, makeTool } from '../../testkit/src/index.ts';
import {
  appendUserMessage,
  findIdempotentResponse,
  getAgent,
  getMessage,
  getSession,
  getTool,
  getToolsByName,
  listAgents,
  listCompactions,
  listSessions,
  listSteps,
  listTools,
  loadHistory,
  NotFoundError,
  readToolOutput,
  saveIdempotentResponse,
  saveToolOutput,
  setSessionStatus,
  startCompaction,
  startStep,
} from '../src/index.ts';

// Tenant scoping: tenant B sees nothing of tenant A, even with A's ids in hand.

describe('tenant scoping', () => {
  test('every getter returns undefined or empty for another tenant', async ({ pg }) => {
    const a = await makeSessionWithTenant(pg.db);
    const b = await makeSessionWithTenant(pg.db);
    const tool = await makeTool(pg.db, a.tenant.id, { name: 'search' });
    const message = await appendUserMessage(pg.db, {
      tenantId: a.tenant.id,
      sessionId: a.session.id,
      agent: 'build',
      parts: [{ type: 'text', text: 'secret', tokens: 1 }],
    });
    await pg.db.transaction().execute(async (trx) => {
      await saveIdempotentResponse(trx, {
        tenantId: a.tenant.id,
        sessionId: a.session.id,
        key: 'k1',
        requestHash: 'h',
        response: { ok: true },
      });
      await saveToolOutput(trx, {
        id: 'out_a',
        tenantId: a.tenant.id,
        sessionId: a.session.id,
        partId: 'prt_x',
        callId: 'call_x',
        content: 'secret output',
        retentionDays: 30,
      });
      await startStep(trx, {
        id: 'stp_a',
        tenantId: a.tenant.id,
        sessionId: a.session.id,
        step: 1,
        kind: 'step',
        jobId: 'j',
        attempt: 1,
        fence: 1,
      });
      await startCompaction(trx, {
        id: 'cmp_a',
        tenantId: a.tenant.id,
        sessionId: a.session.id,
        messageId: message.info.id,
        partId: message.parts[0]!.id,
        reason: 'manual',
      });
    });

    // A sees its own rows ...
    expect(await getSession(pg.db, a.tenant.id, a.session.id)).toBeDefined();
    expect(await getAgent(pg.db, a.tenant.id, a.agent.name)).toBeDefined();
    expect(await getTool(pg.db, a.tenant.id, tool.name)).toBeDefined();
    expect(await loadHistory(pg.db, a.tenant.id, a.session.id)).toHaveLength(1);

    // ... B sees none of them.
    const B = b.tenant.id;
    expect(await getSession(pg.db, B, a.session.id)).toBeUndefined();
    expect(await getAgent(pg.db, B, a.agent.name)).toBeUndefined();
    expect(await getTool(pg.db, B, tool.name)).toBeUndefined();
    expect(await getToolsByName(pg.db, B, [tool.name])).toEqual([]);
    expect(await getMessage(pg.db, B, a.session.id, message.info.id)).toBeUndefined();
    expect(await loadHistory(pg.db, B, a.session.id)).toEqual([]);
    expect(await findIdempotentResponse(pg.db, B, a.session.id, 'k1')).toBeUndefined();
    expect(await readToolOutput(pg.db, B, a.session.id, 'out_a')).toBeUndefined();
    expect(await listSteps(pg.db, B, a.session.id)).toEqual([]);
    expect(await listCompactions(pg.db, B, a.session.id)).toEqual([]);
    expect((await listAgents(pg.db, B)).map((x) => x.name)).toEqual([b.agent.name]);
    expect(await listTools(pg.db, B)).toEqual([]);
    expect((await listSessions(pg.db, B)).map((s) => s.id)).toEqual([b.session.id]);
  });

  test('writes into another tenant session fail', async ({ pg }) => {
    const a = await makeSessionWithTenant(pg.db);
    const b = await makeSessionWithTenant(pg.db);
    await expect(
      appendUserMessage(pg.db, {
        tenantId: b.tenant.id,
        sessionId: a.session.id,
        agent: 'build',
        parts: [{ type: 'text', text: 'intrusion', tokens: 1 }],
      }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(setSessionStatus(pg.db, b.tenant.id, a.session.id, 'queued')).rejects.toBeInstanceOf(
      NotFoundError,
    );
    expect(await loadHistory(pg.db, a.tenant.id, a.session.id)).toEqual([]);
    expect((await getSession(pg.db, a.tenant.id, a.session.id))?.status).toBe('idle');
  });
});
