import { setTimeout as sleep } from 'node:timers/promises';
import {
  COMPACTION_SYSTEM_PROMPT,
  countCapped,
  type FinishReason,
  fitRequest,
  MESSAGE_FRAMING_TOKENS,
  type ModelLimits,
  type ModelMessage,
  summaryRetryDelay,
  type Tokenizer,
  type Usage,
} from '@loopline/core';
import { type ClassifiedError, streamStep } from '@loopline/llm';
import {
  type Hooks,
  type Metered,
  MODEL_CALL_TIMEOUT_MS,
  type Models,
  type Store,
  type Tokens,
} from '../deps.ts';
import { secondsSince } from '../metrics.ts';
import { modelFor } from '../model-endpoint.ts';
import type { SessionWriter } from '../session-writer.ts';
import { StreamRecorder } from '../step/stream-recorder.ts';
import { ignoreSummaryParts } from './summary-message.ts';

// One summary request of the hidden `compaction` agent (docs/context.md §5.3): no tools, its own
// system prompt, streamed. The final summary streams into the summary message as it arrives
// (like a step's reply); partial chunk summaries are only returned. Rate limits and outages are
// retried a few times here; anything else is the ladder's to handle (next rung). Never throws
// for a provider failure, and never decides whether a summary is good enough.
//
// Attempts are atomic: an attempt's text lives only in that attempt. One that fails has its
// streamed parts retired (ignoreSummaryParts: emptied and ignored) before anything else happens,
// so a retry starts empty and no failed attempt's text is ever part of the summary.

export interface SummaryModel {
  ref: string;
  baseURL?: string | undefined;
  limits: ModelLimits;
  /** Whose agent this is: its endpoint and credential (model-endpoint.ts). */
  owner: { tenantId: string; agentName: string };
  /** What the model's chat template accepts (capabilities): role alternation, a system role. */
  template?: { strictAlternation?: boolean; systemRole?: boolean };
  /**
   * Provider tokens per tiktoken token, margin included (the session's learned ratio for the
   * agent's own model): every summary, chunk and merge request is checked against the window with
   * it before it is sent, output included.
   */
  ratio?: number;
}

export type SummaryOutcome =
  | { ok: true; text: string; usage: Usage; finish: FinishReason; partIds: string[]; requests: number }
  | { ok: false; error: ClassifiedError; partIds: string[]; requests: number };

export interface SummarizeInput {
  model: SummaryModel;
  messages: ModelMessage[];
  signal: AbortSignal;
  /** Stream the text into this message (the summary) as it arrives. */
  persist?: { writer: SessionWriter; messageId: string };
  /** Whose tokens these are (metrics); defaults to the persisting writer's tenant. */
  tenantId?: string;
}

/** Makes one summary request of the compaction agent; never throws for a provider failure. */
export async function summarize(
  deps: Models & Store & Tokens & Metered & Hooks,
  input: SummarizeInput,
): Promise<SummaryOutcome> {
  // Never send a request the window cannot take (no request made): the ladder reads an overflow
  // and tries its next rung.
  if (input.model.ratio !== undefined && !summaryFit(deps, input).fits) {
    return {
      ok: false,
      error: { kind: 'overflow', message: 'the summary request would not fit the model window' },
      partIds: [],
      requests: 0,
    };
  }
  for (let attempt = 1; ; attempt++) {
    const out = await summarizeOnce(deps, input);
    // Only the successful attempt's parts are live; a failed one's were retired in summarizeOnce.
    // Whether and when to try again is core's policy (summaryRetryDelay).
    const delay = out.ok ? undefined : summaryRetryDelay(attempt, out.error, input.signal.aborted);
    if (delay === undefined) return { ...out, requests: attempt };
    await sleep(delay, undefined, { signal: input.signal }).catch(() => undefined);
  }
}

/** The request sized with the ratio and margin: does it fit with its output, and how much output to ask for. */
function summaryFit(deps: Tokens, input: SummarizeInput) {
  const size = Math.ceil(requestTokens(deps.tokenizer, input.messages) * (input.model.ratio ?? 1));
  return fitRequest(size, input.model.limits);
}

type AttemptOutcome = DistributiveOmit<SummaryOutcome, 'requests'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

async function summarizeOnce(
  deps: Models & Store & Tokens & Metered & Hooks,
  input: SummarizeInput,
): Promise<AttemptOutcome> {
  const { model, signal } = input;
  const fit = summaryFit(deps, input);
  const recorder = input.persist
    ? new StreamRecorder(input.persist.writer, input.persist.messageId, deps.tokenizer)
    : undefined;
  const blocks = new Map<string, string>();
  let finish: { finish: FinishReason; usage: Usage } | undefined;
  let failure: ClassifiedError | undefined;
  const started = performance.now();
  const events = streamStep({
    purpose: 'summary',
    model: await modelFor(deps, model.owner, model, model.ref),
    system: [COMPACTION_SYSTEM_PROMPT],
    messages: input.messages,
    tools: [],
    maxOutputTokens: fit.output,
    template: model.template,
    abortSignal: signal,
    timeoutMs: deps.llm.callTimeoutMs ?? MODEL_CALL_TIMEOUT_MS,
    ...(deps.llm.replyMaxChars !== undefined ? { maxReplyChars: deps.llm.replyMaxChars } : {}),
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
    ...(failure && !signal.aborted ? { error: failure } : {}),
  });
  const partIds = recorder ? [...recorder.written] : [];
  await recorder?.drain(); // its deltas before whatever the caller publishes next
  // An aborted run is closed by its caller (abandonSummary retires every part of the message).
  if (signal.aborted) return { ok: false, error: { kind: 'aborted', message: 'aborted' }, partIds };
  await recorder?.endAll();
  await deps.racepoint?.('compaction:summary-streamed');
  const text = [...blocks.values()].join('\n').trim();
  if (failure || !finish || text === '') {
    if (input.persist) await ignoreSummaryParts(input.persist.writer, input.persist.messageId, partIds);
    const error: ClassifiedError =
      failure ??
      (finish
        ? { kind: 'terminal', message: 'the summary model returned no text' }
        : { kind: 'retryable', message: 'the summary stream ended without a finish' });
    return { ok: false, error, partIds: [] };
  }
  return { ok: true, text, usage: finish.usage, finish: finish.finish, partIds };
}

/** tiktoken count of a request to the compaction agent: its system prompt and every message's text. */
export function requestTokens(tokenizer: Tokenizer, messages: ModelMessage[]): number {
  let sum = countCapped(tokenizer, COMPACTION_SYSTEM_PROMPT) + MESSAGE_FRAMING_TOKENS;
  for (const m of messages) {
    sum += MESSAGE_FRAMING_TOKENS; // the template's role markers around each message
    for (const part of m.content) {
      if (part.type === 'text' || part.type === 'reasoning') sum += countCapped(tokenizer, part.text);
      else if (part.type === 'tool-call') sum += countCapped(tokenizer, JSON.stringify(part.input) ?? '');
      else if (part.type === 'tool-result') sum += countCapped(tokenizer, part.output.value);
      else sum += 256;
    }
  }
  return sum;
}
