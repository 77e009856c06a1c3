import { AssistantMessage, type Part, type ToolPart, WithParts } from '@loopline/core';
import { describe, expect } from 'vitest';
import { pgTest as test } from '../../testkit/src/fixtures.ts';
import { makeSessionWithTenant } from '../../testkit/src/index.ts';
import {
  appendUserMessage,
  createAssistantMessage,
  type Db,
  getMessage,
  getSession,
  insertPart,
  loadHistory,
  markReverted,
  NotFoundError,
  updateMessageInfo,
  updatePart,
} from '../src/index.ts';

// The log: seq order, user message round trip, idempotent assistant messages, parts, revert.

async function userText(db: Db, tenantId: string, sessionId: string, text: string) {
  return appendUserMessage(db, {
    tenantId,
    sessionId,
    agent: 'build',
    parts: [{ type: 'text', text, tokens: text.length }],
  });
}

describe('history', () => {
  test('seq increases per session in insertion order, independently per session', async ({ pg }) => {
    const a = await makeSessionWithTenant(pg.db);
    const b = await makeSessionWithTenant(pg.db);
    const seqs: number[] = [];
    for (let i = 0; i < 5; i++) {
      seqs.push((await userText(pg.db, a.tenant.id, a.session.id, `a${i}`)).info.seq);
      await userText(pg.db, b.tenant.id, b.session.id, `b${i}`);
    }
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
    const history = await loadHistory(pg.db, b.tenant.id, b.session.id);
    expect(history.map((m) => m.info.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(history.map((m) => (m.parts[0] as { text: string }).text)).toEqual(['b0', 'b1', 'b2', 'b3', 'b4']);
    expect((await getSession(pg.db, a.tenant.id, a.session.id))?.lastSeq).toBe(5);
  });

  test('concurrent appends get distinct, gapless seqs', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const written = await Promise.all(
      Array.from({ length: 20 }, (_, i) => userText(pg.db, tenant.id, session.id, `m${i}`)),
    );
    expect(written.map((m) => m.info.seq).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });

  test('appendUserMessage → loadHistory round trip parses with zod', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const written = await appendUserMessage(pg.db, {
      tenantId: tenant.id,
      sessionId: session.id,
      agent: 'build',
      system: 'be brief',
      now: 1_700_000_000_000,
      parts: [
        { type: 'text', text: 'hello [1, 2]', tokens: 4 },
        { type: 'file', mime: 'image/png', filename: 'a.png', url: 'data:image/png;base64,AAAA', tokens: 85 },
        { type: 'subtask', agent: 'explore', prompt: 'look', description: 'scan', tokens: 2 },
      ],
    });
    const compaction = await appendUserMessage(pg.db, {
      tenantId: tenant.id,
      sessionId: session.id,
      agent: 'build',
      synthetic: true,
      parts: [{ type: 'compaction', auto: true, overflow: false, tokens: 0 }],
    });
    const history = await loadHistory(pg.db, tenant.id, session.id);
    for (const message of history) WithParts.parse(message);
    expect(history).toEqual([written, compaction]);
    expect(history[0]?.info).toMatchObject({
      role: 'user',
      system: 'be brief',
      time: { created: 1_700_000_000_000 },
    });
    expect(history[0]?.parts.map((p) => p.type)).toEqual(['text', 'file', 'subtask']);
    expect(history[0]?.parts.map((p) => p.tokens)).toEqual([4, 85, 2]);
    expect(history[1]?.info).toMatchObject({ synthetic: true });
    expect(await getMessage(pg.db, tenant.id, session.id, written.info.id)).toEqual(written);
  });

  test('partTypes: every message, with only the parts of those types (what a revert plans from)', async ({
    pg,
  }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const first = await userText(pg.db, tenant.id, session.id, 'a long question');
    const compaction = await appendUserMessage(pg.db, {
      tenantId: tenant.id,
      sessionId: session.id,
      agent: 'build',
      synthetic: true,
      parts: [
        { type: 'text', text: 'what came before', tokens: 3 },
        { type: 'compaction', auto: true, overflow: false, tokens: 0 },
      ],
    });
    const shape = await loadHistory(pg.db, tenant.id, session.id, { partTypes: ['compaction'] });
    expect(shape.map((m) => m.info)).toEqual([first.info, compaction.info]);
    expect(shape.map((m) => m.parts.map((p) => p.type))).toEqual([[], ['compaction']]);
    expect(shape[1]?.parts[0]).toEqual(compaction.parts[1]);
  });

  test('a user message refuses assistant-only parts', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    await expect(
      appendUserMessage(pg.db, {
        tenantId: tenant.id,
        sessionId: session.id,
        agent: 'build',
        // @ts-expect-error a reasoning part is not a user part
        parts: [{ type: 'reasoning', text: 'x', tokens: 1 }],
      }),
    ).rejects.toThrow(/reasoning/);
  });

  test('appendUserMessage with an existing id returns the stored message', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const input = {
      tenantId: tenant.id,
      sessionId: session.id,
      agent: 'build',
      id: 'msg_fixed_user',
      parts: [{ type: 'text' as const, text: 'once', tokens: 1 }],
    };
    const first = await appendUserMessage(pg.db, input);
    const second = await appendUserMessage(pg.db, {
      ...input,
      parts: [{ type: 'text', text: 'twice', tokens: 1 }],
    });
    expect(second).toEqual(first);
    expect(await loadHistory(pg.db, tenant.id, session.id)).toHaveLength(1);
  });

  test('createAssistantMessage with the same id twice returns one row', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const user = await userText(pg.db, tenant.id, session.id, 'hi');
    const input = {
      tenantId: tenant.id,
      sessionId: session.id,
      id: 'msg_derived_step_1',
      parentId: user.info.id,
      model: 'compatible/mock',
      agent: 'build',
      step: 1,
    };
    const first = await pg.db.transaction().execute((trx) => createAssistantMessage(trx, input));
    const second = await pg.db
      .transaction()
      .execute((trx) => createAssistantMessage(trx, { ...input, step: 2 }));
    AssistantMessage.parse(first);
    expect(second).toEqual(first);
    expect(first.seq).toBe(2);
    const history = await loadHistory(pg.db, tenant.id, session.id);
    expect(history.map((m) => m.info.id)).toEqual([user.info.id, 'msg_derived_step_1']);
  });

  test('parts: insert is idempotent, update replaces data and tokens, messages update their info', async ({
    pg,
  }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const user = await userText(pg.db, tenant.id, session.id, 'run ls');
    const tool: ToolPart = {
      id: 'prt_tool_1',
      sessionId: session.id,
      messageId: '',
      type: 'tool',
      callId: 'call_1',
      tool: 'bash',
      tokens: 3,
      state: { status: 'pending', input: { cmd: 'ls' } },
    };
    const message = await pg.db.transaction().execute(async (trx) => {
      const msg = await createAssistantMessage(trx, {
        tenantId: tenant.id,
        sessionId: session.id,
        parentId: user.info.id,
        model: 'compatible/mock',
        agent: 'build',
      });
      tool.messageId = msg.id;
      await insertPart(trx, tenant.id, {
        id: 'prt_start_1',
        sessionId: session.id,
        messageId: msg.id,
        type: 'step-start',
        tokens: 0,
      });
      const stored = await insertPart(trx, tenant.id, tool);
      const again = await insertPart(trx, tenant.id, { ...tool, tokens: 99 });
      expect(again).toEqual(stored);
      return msg;
    });
    const completed: Part = {
      ...tool,
      tokens: 40,
      state: {
        status: 'completed',
        input: { cmd: 'ls' },
        output: 'a\nb',
        title: 'ls',
        metadata: {},
        time: { start: 1, end: 2 },
      },
    };
    await pg.db.transaction().execute(async (trx) => {
      await updatePart(trx, tenant.id, completed);
      await updateMessageInfo(trx, tenant.id, {
        ...message,
        finish: 'tool-calls',
        usage: { input: 10, output: 5, reasoning: 0, cache: { read: 0, write: 0 }, total: 15 },
        time: { created: message.time.created, completed: message.time.created + 10 },
      });
    });
    const loaded = await getMessage(pg.db, tenant.id, session.id, message.id);
    expect(loaded && WithParts.parse(loaded)).toBeTruthy();
    expect(loaded?.info).toMatchObject({ finish: 'tool-calls', usage: { total: 15 }, seq: message.seq });
    expect(loaded?.parts.map((p) => p.id)).toEqual(['prt_start_1', 'prt_tool_1']);
    expect(loaded?.parts[1]).toEqual(completed);
  });

  test('a new part costs one statement; only an existing id reads the stored row back', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    const user = await userText(pg.db, tenant.id, session.id, 'x');
    let statements = 0;
    const counted = pg.db.withPlugin({
      transformQuery: (args) => {
        statements++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    const part: Part = {
      id: 'prt_once_1',
      sessionId: session.id,
      messageId: user.info.id,
      type: 'text',
      text: 'once',
      tokens: 1,
    };
    await counted.transaction().execute(async (trx) => {
      statements = 0;
      expect(await insertPart(trx, tenant.id, part)).toEqual(part);
      expect(statements).toBe(1);
      statements = 0;
      expect(await insertPart(trx, tenant.id, { ...part, text: 'twice', tokens: 2 })).toEqual(part);
      expect(statements).toBe(2);
    });
  });

  test('a part cannot join a message of another session', async ({ pg }) => {
    const a = await makeSessionWithTenant(pg.db);
    const other = await makeSessionWithTenant(pg.db);
    const user = await userText(pg.db, a.tenant.id, a.session.id, 'x');
    await expect(
      pg.db.transaction().execute((trx) =>
        insertPart(trx, other.tenant.id, {
          id: 'prt_foreign',
          sessionId: other.session.id,
          messageId: user.info.id,
          type: 'text',
          text: 'sneaky',
          tokens: 1,
        }),
      ),
    ).rejects.toBeInstanceOf(NotFoundError);
  });

  test('loadHistory fromSeq returns only the tail; beforeSeq and last bound the range', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    for (let i = 1; i <= 10; i++) await userText(pg.db, tenant.id, session.id, `m${i}`);
    const tail = await loadHistory(pg.db, tenant.id, session.id, { fromSeq: 8 });
    expect(tail.map((m) => m.info.seq)).toEqual([8, 9, 10]);
    expect(tail.every((m) => m.parts.length === 1)).toBe(true);
    const head = await loadHistory(pg.db, tenant.id, session.id, { fromSeq: 3, beforeSeq: 6 });
    expect(head.map((m) => m.info.seq)).toEqual([3, 4, 5]);
    const last = await loadHistory(pg.db, tenant.id, session.id, { last: 2 });
    expect(last.map((m) => m.info.seq)).toEqual([9, 10]);
    expect(await loadHistory(pg.db, tenant.id, session.id, { fromSeq: 11 })).toEqual([]);
  });

  test('markReverted hides messages from the seq on, keeps the rows', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    for (let i = 1; i <= 5; i++) await userText(pg.db, tenant.id, session.id, `m${i}`);
    const marked = await pg.db.transaction().execute((trx) => markReverted(trx, tenant.id, session.id, 4));
    expect(marked).toBe(2);
    expect(await pg.db.transaction().execute((trx) => markReverted(trx, tenant.id, session.id, 4))).toBe(0);
    expect((await loadHistory(pg.db, tenant.id, session.id)).map((m) => m.info.seq)).toEqual([1, 2, 3]);
    const all = await loadHistory(pg.db, tenant.id, session.id, { includeReverted: true });
    expect(all.map((m) => [m.info.seq, m.info.reverted ?? false])).toEqual([
      [1, false],
      [2, false],
      [3, false],
      [4, true],
      [5, true],
    ]);
    for (const m of all) WithParts.parse(m);
  });

  test('writes to a missing message throw NotFoundError', async ({ pg }) => {
    const { tenant, session } = await makeSessionWithTenant(pg.db);
    await expect(
      pg.db.transaction().execute((trx) =>
        updateMessageInfo(trx, tenant.id, {
          id: 'msg_missing',
          sessionId: session.id,
          seq: 1,
          role: 'user',
          agent: 'build',
          time: { created: 0 },
        }),
      ),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(userText(pg.db, tenant.id, 'ses_missing', 'x')).rejects.toBeInstanceOf(NotFoundError);
  });
});
