import { newId, type Part, type Usage, type WithParts } from '@loopline/core';
import {
  appendUserMessage,
  createAssistantMessage,
  type Db,
  finishCompaction,
  insertPart,
  startCompaction,
  updateMessageInfo,
  updateSessionProgress,
} from '@loopline/db';

// A session's log written straight through the db repositories, the way the worker writes it
// (user messages, finished assistant replies with their parts, compaction markers and summaries,
// compaction records), so gateway tests can read known histories with known token counts.

export interface Ctx {
  db: Db;
  tenantId: string;
  sessionId: string;
}

/** A usage of `input` and `output` tokens, no cache. */
export const usageOf = (input: number, output: number): Usage => ({
  input,
  output,
  reasoning: 0,
  cache: { read: 0, write: 0 },
  total: input + output,
});

/** Appends a user message with one text part. */
export async function userMsg(ctx: Ctx, text: string, tokens = 10, synthetic = false): Promise<WithParts> {
  return appendUserMessage(ctx.db, {
    tenantId: ctx.tenantId,
    sessionId: ctx.sessionId,
    agent: 'helper',
    ...(synthetic ? { synthetic: true } : {}),
    parts: [{ type: 'text', text, tokens }],
  });
}

export type PartSpec =
  | { text: string; tokens: number }
  | { tool: string; output: string; outputTokens: number; tokens: number };

/** A finished assistant reply (finish `stop` unless told) answering `parentId`. */
export async function assistantMsg(
  ctx: Ctx,
  parentId: string,
  parts: PartSpec[],
  opts: { usage?: Usage; summary?: boolean; finish?: 'stop' | 'tool-calls' } = {},
): Promise<WithParts> {
  return ctx.db.transaction().execute(async (trx) => {
    const info = await createAssistantMessage(trx, {
      tenantId: ctx.tenantId,
      sessionId: ctx.sessionId,
      parentId,
      model: 'compatible/mock',
      agent: opts.summary ? 'compaction' : 'helper',
      ...(opts.summary ? { summary: true } : {}),
    });
    const written: Part[] = [];
    for (const spec of parts) {
      const base = { id: newId('prt'), sessionId: ctx.sessionId, messageId: info.id, tokens: spec.tokens };
      const part: Part =
        'text' in spec
          ? { ...base, type: 'text', text: spec.text }
          : {
              ...base,
              type: 'tool',
              tool: spec.tool,
              callId: newId('prt'),
              outputTokens: spec.outputTokens,
              state: {
                status: 'completed',
                input: {},
                output: spec.output,
                title: '',
                metadata: {},
                time: { start: 1, end: 2 },
              },
            };
      written.push(await insertPart(trx, ctx.tenantId, part));
    }
    const done = {
      ...info,
      finish: opts.finish ?? 'stop',
      time: { ...info.time, completed: info.time.created + 1 },
      ...(opts.usage ? { usage: opts.usage } : {}),
    };
    await updateMessageInfo(trx, ctx.tenantId, done);
    return { info: done, parts: written };
  });
}

/** A compaction marker, its completed summary and the compaction record; sets the boundary pointer. */
export async function compactionPoint(
  ctx: Ctx,
  opts: { tailStartId?: string; tokensBefore?: number; tokensAfter?: number; setBoundary?: boolean } = {},
): Promise<{ marker: WithParts; summary: WithParts; recordId: string }> {
  const marker = await appendUserMessage(ctx.db, {
    tenantId: ctx.tenantId,
    sessionId: ctx.sessionId,
    agent: 'helper',
    synthetic: true,
    parts: [
      {
        type: 'compaction',
        auto: true,
        overflow: false,
        ...(opts.tailStartId ? { tailStartId: opts.tailStartId } : {}),
        tokens: 6,
      },
    ],
  });
  const recordId = newId('cmp');
  await ctx.db.transaction().execute((trx) =>
    startCompaction(trx, {
      id: recordId,
      tenantId: ctx.tenantId,
      sessionId: ctx.sessionId,
      messageId: marker.info.id,
      partId: marker.parts[0]!.id,
      reason: 'auto',
      model: 'compatible/mock',
      tokensBefore: opts.tokensBefore ?? 90_000,
    }),
  );
  const summary = await assistantMsg(
    ctx,
    marker.info.id,
    [{ text: 'SUMMARY of the work so far', tokens: 40 }],
    {
      summary: true,
    },
  );
  await ctx.db.transaction().execute(async (trx) => {
    await finishCompaction(trx, ctx.tenantId, recordId, {
      status: 'completed',
      rung: 'summary',
      summaryMessageId: summary.info.id,
      tokensAfter: opts.tokensAfter ?? 9_000,
      headMessages: 4,
      ...(opts.tailStartId ? { tailStartId: opts.tailStartId } : {}),
    });
    if (opts.setBoundary !== false)
      await updateSessionProgress(trx, ctx.tenantId, ctx.sessionId, {
        boundarySeq: marker.info.seq,
        compactionCount: 1,
        lastCompactionAt: new Date(),
      });
  });
  return { marker, summary, recordId };
}
