import { performance } from 'node:perf_hooks';
import {
  type AssistantMessage,
  buildCompactionInput,
  type CompactionPart,
  compactionRange,
  contextBudget,
  countCapped,
  defaultTailBudget,
  estimateNextPrompt,
  filterCompacted,
  findAnchor,
  findBoundarySeq,
  newId,
  type Part,
  projectAfterCompaction,
  requestOverhead,
  selectTail,
  structuralSummary,
  type TextPart,
} from '@loopline/core';
import {
  acquireFence,
  appendUserMessage,
  createAssistantMessage,
  finishCompaction,
  getSession,
  insertPart,
  loadHistory,
  setSessionStatus,
  startCompaction,
  updateMessageInfo,
  updatePart,
  updateSessionProgress,
  withFence,
} from '@loopline/db';
import { createTokenizer, limitsFor } from '@loopline/llm';
import { figureArgs } from '../lib/args.ts';
import { insertHistory } from '../lib/history-db.ts';
import { freshDatabase } from '../lib/infra.ts';
import { emit, log } from '../lib/result.ts';
import { benchSessions, benchTenant } from '../lib/service.ts';
import { fmt, median, summarize } from '../lib/stats.ts';
import { buildHistory } from '../lib/trajectories.ts';

// Compaction job overhead excluding model time, for a 200,000-token history (real agent
// trajectories, no earlier boundary). The compaction job itself (apps/worker/src/compaction/) is
// being written; this measures its pure work with core and db directly, in the job's order:
// load the session and its log, find the frozen range, open the summary (message, compaction
// record; one fenced transaction), plan the tail, build the summary request, make the summary
// without a model (the structural rung), project the next prompt, and commit (summary text,
// finish, marker's tailStartId, continue message, boundary pointer, record; one fenced
// transaction). Each run uses its own session with the same history.

const args = figureArgs({ runs: 5, quickRuns: 3 });
const TOKENS = 200_000;
const started = performance.now();

const tokenizer = createTokenizer('o200k_base');
const database = await freshDatabase('compaction');
const { db } = database;
const tenant = await benchTenant(db, { model: 'openai/gpt-4o', compaction: { triggerRatio: 0.9 } });
const built = buildHistory('ses_bench', tokenizer, TOKENS);
const sessions = await benchSessions(db, tenant, args.runs + 1);
const markers: string[] = [];
for (const sessionId of sessions) {
  await insertHistory(db, tenant.tenantId, sessionId, built.messages);
  const marker = await appendUserMessage(db, {
    tenantId: tenant.tenantId,
    sessionId,
    agent: 'bench',
    synthetic: true,
    parts: [{ type: 'compaction', auto: true, overflow: false, tokens: 9 }],
  });
  markers.push(marker.info.id);
}
log(
  `compaction: ${built.messages.length} messages, ${built.tokens.toLocaleString('en-US')} tokens per session, ` +
    `${args.runs} runs (+1 warm-up)`,
);

interface Run {
  load: number;
  plan: number;
  open: number;
  summary: number;
  commit: number;
  total: number;
  head: number;
  tail: number;
  summaryTokens: number;
  projected: number;
  inputMessages: number;
}

async function compact(sessionId: string, markerId: string): Promise<Run> {
  const t0 = performance.now();
  const fence = await acquireFence(db, tenant.tenantId, sessionId);
  const f = { tenantId: tenant.tenantId, sessionId, fence };
  const session = (await getSession(db, tenant.tenantId, sessionId))!;
  const history = await loadHistory(db, tenant.tenantId, sessionId, { fromSeq: session.boundarySeq });
  const t1 = performance.now();

  const agent = { ...session.agent, limits: limitsFor(session.agent.model, session.agent.limits) };
  const budget = contextBudget(agent.limits, agent.compaction);
  const view = filterCompacted(history);
  const overhead = requestOverhead(tokenizer, ['You are a helpful assistant.'], built.tools);
  const estimate = estimateNextPrompt({
    anchor: findAnchor(view),
    messages: view,
    ratio: 1,
    resendsReasoning: false,
    model: agent.model,
    overhead,
  });
  const range = compactionRange(history, markerId)!;
  const split = selectTail(range.frozen, {
    tailTurns: agent.compaction.tailTurns,
    budget: agent.compaction.preserveRecentTokens ?? defaultTailBudget(budget.usable),
  });
  const input = buildCompactionInput(split.head, {});
  const t2 = performance.now();

  const summaryId = `${range.part.id}_summary`;
  const compactionId = `${range.part.id}_cmp`;
  const opened = await withFence(db, f, async (trx) => {
    const msg = await createAssistantMessage(trx, {
      tenantId: f.tenantId,
      sessionId,
      id: summaryId,
      parentId: markerId,
      model: agent.model,
      agent: 'compaction',
      summary: true,
    });
    await startCompaction(trx, {
      id: compactionId,
      tenantId: f.tenantId,
      sessionId,
      messageId: markerId,
      partId: range.part.id,
      reason: 'auto',
      model: agent.model,
      tokensBefore: estimate,
      jobId: 'bench',
      attempt: 1,
    });
    await setSessionStatus(trx, f.tenantId, sessionId, 'compacting', null, null);
    return msg;
  });
  const t3 = performance.now();

  // The model's rung is skipped (its time is not Loopline's); the structural rung needs none.
  const text = structuralSummary(split.head);
  const summaryTokens = countCapped(tokenizer, text);
  const projected = projectAfterCompaction({
    systemTokens: overhead,
    summaryTokens,
    tail: split.tail,
    pending: range.pending,
    ratio: 1,
  });
  const t4 = performance.now();

  const part: CompactionPart = { ...range.part, tailStartId: split.tailStartId };
  const summaryInfo: AssistantMessage = {
    ...opened,
    finish: 'stop',
    time: { ...opened.time, completed: Date.now() },
  };
  await withFence(db, f, async (trx) => {
    const textPart: TextPart = {
      id: newId('prt'),
      sessionId,
      messageId: summaryId,
      type: 'text',
      text,
      synthetic: true,
      tokens: summaryTokens,
    };
    await insertPart(trx, f.tenantId, textPart);
    await updateMessageInfo(trx, f.tenantId, summaryInfo);
    await updatePart(trx, f.tenantId, part as Part);
    await appendUserMessage(trx, {
      tenantId: f.tenantId,
      sessionId,
      agent: 'bench',
      synthetic: true,
      parts: [{ type: 'text', text: 'Continue.', synthetic: true, tokens: 2 }],
    });
    const log = history
      .filter((m) => m.info.id !== summaryId)
      .map((m) =>
        m.info.id === markerId ? { ...m, parts: m.parts.map((p) => (p.id === part.id ? part : p)) } : m,
      );
    log.push({ info: summaryInfo, parts: [] });
    await updateSessionProgress(trx, f.tenantId, sessionId, {
      boundarySeq: findBoundarySeq(log) ?? null,
      compactionCount: session.compactionCount + 1,
      lastCompactionAt: new Date(),
      lastUsage: null,
    });
    await finishCompaction(trx, f.tenantId, compactionId, {
      status: 'completed',
      rung: 'structural',
      summaryMessageId: summaryId,
      tokensBefore: estimate,
      tokensAfter: projected,
      headMessages: split.head.length,
      tailStartId: split.tailStartId ?? null,
    });
    await setSessionStatus(trx, f.tenantId, sessionId, 'queued', null, null);
  });
  const t5 = performance.now();
  return {
    load: t1 - t0,
    plan: t2 - t1,
    open: t3 - t2,
    summary: t4 - t3,
    commit: t5 - t4,
    total: t5 - t0,
    head: split.head.length,
    tail: split.tail.length,
    summaryTokens,
    projected,
    inputMessages: input.length,
  };
}

await compact(sessions[0]!, markers[0]!); // warm-up
const runs: Run[] = [];
for (let r = 1; r <= args.runs; r++) {
  runs.push(await compact(sessions[r]!, markers[r]!));
  log(`  run ${r}: ${fmt(runs.at(-1)!.total)} ms`);
}
const check = await getSession(db, tenant.tenantId, sessions[1]!);
const after = filterCompacted(
  await loadHistory(db, tenant.tenantId, sessions[1]!, { fromSeq: check!.boundarySeq }),
);
await database.drop();

const total = runs.map((r) => r.total);
const m = (f: (r: Run) => number) => fmt(median(runs.map(f)));
emit({
  name: 'compaction',
  title: 'Compaction job overhead (model time excluded)',
  rows: [
    {
      figure: 'compaction job overhead, 200k-token history',
      unit: 'ms',
      loopline: summarize(total),
      target: '< 100 ms',
      met: median(total) < 100,
      note: 'core + db directly (the job is being written)',
    },
  ],
  details: [
    `History: ${built.messages.length} messages, ${built.tokens.toLocaleString('en-US')} tiktoken tokens ` +
      `(${built.source.includes('trajectories') ? 'real agent trajectories' : built.source}), no earlier boundary; ` +
      `a compaction marker appended at the end. Head ${runs[0]!.head} messages summarised, tail ${runs[0]!.tail} kept; ` +
      `summary request ${runs[0]!.inputMessages} model messages; structural summary ${runs[0]!.summaryTokens} tokens; ` +
      `projected next prompt ${runs[0]!.projected.toLocaleString('en-US')} tokens. After the commit the model view ` +
      `starts at the new boundary (${after.length} messages).`,
    '',
    '| step | median ms |',
    '| --- | ---: |',
    `| fence, session row, load the log (PostgreSQL) | ${m((r) => r.load)} |`,
    `| filterCompacted, estimate, compactionRange, selectTail, buildCompactionInput | ${m((r) => r.plan)} |`,
    `| open the summary (fenced transaction) | ${m((r) => r.open)} |`,
    `| structural summary, its count, projectAfterCompaction | ${m((r) => r.summary)} |`,
    `| commit (fenced transaction) | ${m((r) => r.commit)} |`,
    `| **total** | **${m((r) => r.total)}** |`,
  ],
  elapsedMs: performance.now() - started,
});
process.exit(0);
