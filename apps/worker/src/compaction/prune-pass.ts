import {
  minimumBeforeCompaction,
  newId,
  type Part,
  planPrune,
  pruneOptions,
  type ToolPart,
} from '@loopline/core';
import { finishStep, startStep, updatePart } from '@loopline/db';
import type { Flags } from '../deps.ts';
import type { SessionContext } from '../session-context.ts';
import type { SessionWriter } from '../session-writer.ts';

// One prune pass (docs/context.md §3.2), no LLM: plan over the model view, then mark every chosen tool
// output `time.compacted` in one fenced transaction (the output itself stays stored; `tokens`
// keeps the count at write time, which core reads together with the mark). Idempotent: a retried
// pass re-plans, and an output already cleared stops the walk, so nothing is marked twice.

export interface PruneResult {
  parts: number;
  /** Output tokens cleared (tiktoken). */
  tokens: number;
}

/** Plans a prune over the model view and marks the chosen outputs cleared in one fenced write. */
export async function prunePass(
  deps: Flags,
  writer: SessionWriter,
  ctx: SessionContext,
  job: { id: string; attempt: number },
  /** The pass runs because a summary compaction is needed (prune first): see minimumBeforeCompaction. */
  beforeCompaction = false,
): Promise<PruneResult> {
  const c = ctx.agent.compaction;
  if (!c.prune || deps.flags.disablePrune) return { parts: 0, tokens: 0 };
  const opts = pruneOptions(c, ctx.budget.usable);
  if (beforeCompaction) {
    const over = Math.ceil((ctx.estimate - ctx.budget.trigger + 1) / (ctx.session.tokenRatio ?? 1));
    opts.minimum = minimumBeforeCompaction(opts.minimum, over);
  }
  const plan = planPrune(ctx.view, opts);
  const chosen = new Set(plan.partIds);
  const now = Date.now();
  const marked: ToolPart[] = [];
  for (const m of ctx.view) {
    for (const p of m.parts) {
      if (p.type !== 'tool' || p.state.status !== 'completed' || !chosen.has(p.id)) continue;
      marked.push({ ...p, state: { ...p.state, time: { ...p.state.time, compacted: now } } });
    }
  }
  const { tenantId, sessionId, fence } = writer.ctx;
  const ledgerId = newId('stp');
  await writer.write(async (trx, emit) => {
    await startStep(trx, {
      id: ledgerId,
      tenantId,
      sessionId,
      step: ctx.session.stepCount,
      kind: 'prune',
      jobId: job.id,
      attempt: job.attempt,
      fence,
    });
    for (const part of marked) {
      await updatePart(trx, tenantId, part as Part);
      emit({ type: 'part.updated', part });
    }
    await finishStep(trx, tenantId, ledgerId, { outcome: 'completed' });
    if (marked.length > 0) emit({ type: 'session.pruned', parts: marked.length, tokens: plan.tokens });
  });
  return { parts: marked.length, tokens: marked.length > 0 ? plan.tokens : 0 };
}
