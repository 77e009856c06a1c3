import { setTimeout as sleep } from 'node:timers/promises';
import {
  COMPACTION_SYSTEM_PROMPT,
  countCapped,
  type FinishReason,
  type ModelLimits,
  type ModelMessage,
  type Tokenizer,
  type Usage,
} from '@loopline/core';
import { type ClassifiedError, streamStep } from '@loopline/llm';
import type { WorkerDeps } from '../deps.ts';
import { secondsSince } from '../metrics.ts';
import { modelFor } from '../model-endpoint.ts';
import type { SessionWriter } from '../session-writer.ts';
import { StreamRecorder } from '../step/stream-recorder.ts';

// One summary request of the hidden `compaction` agent (CONTEXT.md §5.3): no tools, its own
// system prompt, streamed. The final summary streams into the summary message as it arrives
// (like a step's reply); partial chunk summaries are only returned. Rate limits and outages are
// retried a few times here; anything else is the ladder's to handle (next rung). Never throws
// for a provider failure, and never decides whether a summary is good enough.

export interface SummaryModel {
  ref: string;
  baseURL?: string | undefined;
  limits: ModelLimits;
  /** Whose agent this is: its endpoint and credential (model-endpoint.ts). */
  owner: { tenantId: string; agentName: string };
}

export type SummaryOutcome =
  | { ok: true; text: string; usage: Usage; finish: FinishReason; partIds: string[] }
  | { ok: false; error: ClassifiedError; partIds: string[] };

export interface SummarizeInput {
  model: SummaryModel;
  messages: ModelMessage[];
  signal: AbortSignal;
  /** Stream the text into this message (the summary) as it arrives. */
  persist?: { writer: SessionWriter; messageId: string };
  /** Whose tokens these are (metrics); defaults to the persisting writer's tenant. */
  tenantId?: string;
}

/** Tries per request when the provider answers with a retryable error (429, 5xx, network). */
export const SUMMARY_ATTEMPTS = 3;
const MAX_BACKOFF_MS = 5_000;

export async function summarize(deps: WorkerDeps, input: SummarizeInput): Promise<SummaryOutcome> {
  const partIds: string[] = [];
  for (let attempt = 1; ; attempt++) {
    const out = await summarizeOnce(deps, input);
    partIds.push(...out.partIds);
    if (out.ok || out.error.kind !== 'retryable' || attempt >= SUMMARY_ATTEMPTS || input.signal.aborted) {
      return { ...out, partIds };
    }
    const backoff = Math.min(MAX_BACKOFF_MS, Math.max(out.error.retryAfterMs ?? 0, 500 * 2 ** (attempt - 1)));
    await sleep(backoff, undefined, { signal: input.signal }).catch(() => undefined);
  }
}

async function summarizeOnce(deps: WorkerDeps, input: SummarizeInput): Promise<SummaryOutcome> {
  const { model, signal } = input;
  const recorder = input.persist
    ? new StreamRecorder(input.persist.writer, input.persist.messageId, deps.tokenizer)
    : undefined;
  const blocks = new Map<string, string>();
  let finish: { finish: FinishReason; usage: Usage } | undefined;
  let failure: ClassifiedError | undefined;
  const started = performance.now();
  const events = streamStep({
    model: await modelFor(deps, model.owner, model, model.ref),
    system: [COMPACTION_SYSTEM_PROMPT],
    messages: input.messages,
    tools: [],
    maxOutputTokens: model.limits.output || undefined,
    abortSignal: signal,
  });
  // Reasoning and tool calls are not part of a summary: only text blocks are kept.
  for await (const ev of events) {
    switch (ev.type) {
      case 'text-start':
        blocks.set(ev.id, '');
        await recorder?.start(ev.id, 'text');
        break;
      case 'text-delta':
        blocks.set(ev.id, (blocks.get(ev.id) ?? '') + ev.text);
        await recorder?.delta(ev.id, ev.text);
        break;
      case 'text-end':
        await recorder?.end(ev.id);
        break;
      case 'finish':
        finish = { finish: ev.finish, usage: ev.usage };
        break;
      case 'error':
        failure = ev.error;
        break;
    }
  }
  deps.metrics?.modelCall({
    purpose: 'summary',
    model: model.ref,
    tenantId: input.tenantId ?? input.persist?.writer.ctx.tenantId ?? 'unknown',
    seconds: secondsSince(started),
    outcome: signal.aborted ? 'aborted' : finish && !failure ? 'finish' : 'error',
    usage: finish?.usage,
  });
  const partIds = recorder ? [...recorder.written] : [];
  if (signal.aborted) return { ok: false, error: { kind: 'aborted', message: 'aborted' }, partIds };
  await recorder?.endAll();
  await deps.racepoint?.('compaction:summary-streamed');
  if (failure || !finish) {
    return {
      ok: false,
      error: failure ?? { kind: 'retryable', message: 'the summary stream ended without a finish' },
      partIds,
    };
  }
  const text = [...blocks.values()].join('\n').trim();
  if (text === '') {
    return { ok: false, error: { kind: 'terminal', message: 'the summary model returned no text' }, partIds };
  }
  return { ok: true, text, usage: finish.usage, finish: finish.finish, partIds };
}

/** tiktoken count of a request to the compaction agent: its system prompt and every message's text. */
export function requestTokens(tokenizer: Tokenizer, messages: ModelMessage[]): number {
  let sum = countCapped(tokenizer, COMPACTION_SYSTEM_PROMPT);
  for (const m of messages) {
    for (const part of m.content) {
      if (part.type === 'text' || part.type === 'reasoning') sum += countCapped(tokenizer, part.text);
      else if (part.type === 'tool-call') sum += countCapped(tokenizer, JSON.stringify(part.input) ?? '');
      else if (part.type === 'tool-result') sum += countCapped(tokenizer, part.output.value);
      else sum += 256;
    }
  }
  return sum;
}
