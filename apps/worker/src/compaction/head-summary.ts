import {
  addUsage,
  buildCompactionInput,
  buildMergeInput,
  chunkRound,
  emptyUsage,
  exceedsWindow,
  firstChunkBudget,
  type SummaryPromptInput,
  type Usage,
  type WithParts,
} from '@loopline/core';
import type { ClassifiedError } from '@loopline/llm';
import type { Hooks, Metered, Models, Store, Tokens } from '../deps.ts';
import type { SessionWriter } from '../session-writer.ts';
import { requestTokens, type SummaryModel, type SummaryOutcome, summarize } from './summarize.ts';

// The LLM rungs of one head (docs/context.md §5.6): one summary request when it fits the summary
// model's window; otherwise — or when the provider answers "too long" — the head in chunks that
// fit (map), then one merge request. A chunk the provider still rejects halves the chunk size.
// Returns the summary text (streamed into the summary message) or why no LLM summary was made;
// the caller falls to the structural rung then.

/** `requests`: model requests this head cost (attempts, chunks and the merge), for the compaction record. */
export type HeadSummary =
  | { ok: true; text: string; usage: Usage; partIds: string[]; chunked: boolean; requests: number }
  | { ok: false; error: ClassifiedError; usage: Usage; partIds: string[]; requests: number };

export interface HeadSummaryInput {
  head: WithParts[];
  model: SummaryModel;
  prompt: Omit<SummaryPromptInput, 'previousSummary'>;
  /** Provider tokens per tiktoken token. */
  ratio: number;
  writer: SessionWriter;
  summaryMessageId: string;
  signal: AbortSignal;
}

/** Summarises a head with the LLM rungs (whole, or chunked then merged). */
export async function summarizeHead(
  deps: Models & Store & Tokens & Metered & Hooks,
  input: HeadSummaryInput,
): Promise<HeadSummary> {
  const { model, ratio } = input;
  const messages = buildCompactionInput(input.head, input.prompt);
  const size = Math.ceil(requestTokens(deps.tokenizer, messages) * ratio);
  let requests = 0;
  if (!exceedsWindow(size, model.limits)) {
    const out = await summarize(deps, {
      model,
      messages,
      signal: input.signal,
      persist: persistTo(input),
      tenantId: input.writer.ctx.tenantId,
    });
    if (out.ok) return { ...out, chunked: false };
    if (out.error.kind !== 'overflow') return failed(out, emptyUsage(), out.requests);
    requests = out.requests;
  }
  return summarizeInChunks(deps, input, requests);
}

async function summarizeInChunks(
  deps: Models & Store & Tokens & Metered & Hooks,
  input: HeadSummaryInput,
  before: number,
): Promise<HeadSummary> {
  const { model, ratio, head, signal } = input;
  const fixed = requestTokens(deps.tokenizer, buildCompactionInput([], input.prompt));
  const first = firstChunkBudget(model.limits, ratio, fixed);
  let usage = emptyUsage();
  let requests = before;
  const gaveUp = (message: string): HeadSummary => ({
    ok: false,
    error: { kind: 'overflow', message },
    usage,
    partIds: [],
    requests,
  });
  // Core's chunk rounds (chunkRound): each a chunk size half the last; this loop makes the requests.
  for (let round = 0; ; round++) {
    const plan = chunkRound(head, round, first);
    if (!plan) break;
    if ('gaveUp' in plan) return gaveUp(plan.gaveUp);
    const { chunks } = plan;
    const partials: string[] = [];
    let rejected = false;
    for (const chunk of chunks) {
      // One chunk is the whole head: its summary is the summary (anchored on the previous one).
      const single = chunks.length === 1;
      const out = await summarize(deps, {
        model,
        messages: buildCompactionInput(single ? head : chunk, input.prompt),
        signal,
        persist: single ? persistTo(input) : undefined,
        tenantId: input.writer.ctx.tenantId,
      });
      requests += out.requests;
      if (!out.ok) {
        if (out.error.kind !== 'overflow') return failed(out, usage, requests);
        rejected = true;
        break;
      }
      usage = addUsage(usage, out.usage);
      if (single) return { ok: true, text: out.text, usage, partIds: out.partIds, chunked: true, requests };
      partials.push(out.text);
    }
    if (rejected) continue;
    const merge = buildMergeInput(partials, head, input.prompt);
    if (exceedsWindow(Math.ceil(requestTokens(deps.tokenizer, merge) * ratio), model.limits)) {
      return gaveUp('the partial summaries do not fit one merge request');
    }
    const out = await summarize(deps, {
      model,
      messages: merge,
      signal,
      persist: persistTo(input),
      tenantId: input.writer.ctx.tenantId,
    });
    requests += out.requests;
    if (!out.ok) return failed(out, usage, requests);
    return {
      ok: true,
      text: out.text,
      usage: addUsage(usage, out.usage),
      partIds: out.partIds,
      chunked: true,
      requests,
    };
  }
  return gaveUp('no chunk size fits the summary model window');
}

function persistTo(input: HeadSummaryInput) {
  return { writer: input.writer, messageId: input.summaryMessageId };
}

function failed(out: Extract<SummaryOutcome, { ok: false }>, usage: Usage, requests: number): HeadSummary {
  return { ok: false, error: out.error, usage, partIds: out.partIds, requests };
}
