import {
  addUsage,
  type CompactionPlan,
  type CompactionRange,
  clipToTokens,
  countCapped,
  type ErrorData,
  emptyUsage,
  errorData,
  llmRungs,
  planCompaction,
  structuralPlan,
  structuralSummary,
  type Usage,
  type WithParts,
} from '@loopline/core';
import { tenantFacingMessage } from '@loopline/llm';
import type { Logger } from 'pino';
import type { Hooks, Metered, Models, Store, Tokens } from '../deps.ts';
import { type SessionContext, sessionRatio } from '../session-context.ts';
import type { SessionWriter } from '../session-writer.ts';
import { summarizeHead } from './head-summary.ts';
import type { SummaryModel } from './summarize.ts';
import { ignoreSummaryParts } from './summary-message.ts';

// The compaction ladder (docs/context.md §5.6: never loop, always progress). Each rung is tried once,
// cheapest useful first, and only a result whose projected next prompt is under the trigger is
// taken:
//   summary          LLM summary of the head, verbatim tail kept;
//   summary-no-tail  the tail dropped and everything summarised (also first when the tail alone
//                    leaves no room for a summary);
//   chunked          either of those when the request is too long for the summary model: the
//                    head in chunks that fit, then a merge;
//   structural       no LLM: range, tool actions, files, last request; clipped to the room left. Cannot fail.
// A failed or rejected LLM summary never becomes a boundary: its text parts are marked ignored.

export type Rung = 'summary' | 'summary-no-tail' | 'chunked' | 'structural';

export interface LadderInput {
  ctx: SessionContext;
  range: CompactionRange;
  model: SummaryModel;
  summaryMessageId: string;
  writer: SessionWriter;
  signal: AbortSignal;
  log: Logger;
}

export interface LadderResult {
  rung: Rung;
  text: string;
  /** LLM rungs streamed their text into the summary message; the structural text is not written yet. */
  persisted: boolean;
  usage: Usage;
  plan: CompactionPlan;
  /** Provider-scale size of the next prompt after this compaction. */
  tokensAfter: number;
  /** SummaryGenerationError when an LLM summary failed and the structural rung was used. */
  error: ErrorData | undefined;
  /** Model requests the whole ladder made (retries, rungs, chunks, merge): one compaction, N requests. */
  requests: number;
}

/** Climbs the compaction ladder until a rung gives a summary that helps. */
export async function runLadder(
  deps: Models & Store & Tokens & Metered & Hooks,
  input: LadderInput,
): Promise<LadderResult> {
  const { ctx, range, log } = input;
  const plans = planCompaction(
    {
      agent: ctx.agent,
      budget: ctx.budget,
      overheadTokens: ctx.shape.overheadTokens,
      ratio: sessionRatio(ctx.session, ctx.agent),
    },
    range,
    deps.tokenizer,
  );
  const { trigger } = plans;
  const c = ctx.agent.compaction;
  const prompt = { prompt: c.prompt, extraContext: c.extraContext, instructions: range.part.instructions };

  const rungs = llmRungs(plans);

  let usage = emptyUsage();
  let error: ErrorData | undefined;
  let requests = 0;
  for (const { plan, rung } of rungs) {
    const out = await summarizeHead(deps, {
      head: plan.head,
      model: input.model,
      prompt,
      ratio: plans.ratio,
      writer: input.writer,
      summaryMessageId: input.summaryMessageId,
      signal: input.signal,
    });
    usage = addUsage(usage, out.usage);
    requests += out.requests;
    if (!out.ok) {
      // Belt and braces: whatever a failed rung streamed is retired before the next rung.
      await ignoreSummaryParts(input.writer, input.summaryMessageId, out.partIds);
      if (out.error.kind === 'aborted' || input.signal.aborted)
        throw new Error('compaction aborted: lease lost');
      const said = tenantFacingMessage(out.error, input.model.baseURL ? 'own' : 'operator');
      error = errorData('SummaryGenerationError', said, { kind: out.error.kind, rung });
      log.warn({ rung, kind: out.error.kind, err: out.error.message }, 'summary failed; structural rung');
      break;
    }
    const tokensAfter = plans.project(plan, countCapped(deps.tokenizer, out.text));
    if (tokensAfter < trigger) {
      return {
        rung: out.chunked ? 'chunked' : rung,
        text: out.text,
        persisted: true,
        usage,
        plan,
        tokensAfter,
        error: undefined,
        requests,
      };
    }
    log.info(
      { rung, tokensAfter, trigger },
      'summary does not bring the context under the trigger; next rung',
    );
    await ignoreSummaryParts(input.writer, input.summaryMessageId, out.partIds);
  }
  return structuralRung(deps, plans, usage, error, requests);
}

function structuralRung(
  deps: Tokens,
  plans: ReturnType<typeof planCompaction>,
  usage: Usage,
  error: ErrorData | undefined,
  requests: number,
): LadderResult {
  // Keep the verbatim tail when the structural text still fits beside it (core structuralPlan).
  const { plan, maxTokens } = structuralPlan(plans);
  const text = clipToTokens(structuralSummary(plan.head as WithParts[]), maxTokens, deps.tokenizer);
  return {
    rung: 'structural',
    text,
    persisted: false,
    usage,
    plan,
    tokensAfter: plans.project(plan, countCapped(deps.tokenizer, text)),
    error,
    requests,
  };
}
