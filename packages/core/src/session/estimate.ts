// The pre-call overflow estimate (CONTEXT.md §2 point 1): the provider's own count of the last
// request, plus tiktoken counts of what was added since, scaled by a per-session provider/tiktoken
// ratio. Provider counts are the truth; tiktoken only has to measure the difference.

import type { WithParts } from '../schema/message.ts';
import type { Usage } from '../schema/usage.ts';
import { estimateTokens, storedOutputTokens, storedTokens } from './tokens.ts';
import { promptTokens } from './usage.ts';

/** The provider's last report: what the request of message `messageSeq` cost. */
export interface Anchor {
  usage: Usage;
  messageSeq: number;
  /** When the report was written; parts pruned after it shrink the next prompt. */
  time?: number;
}

/**
 * The newest reply that can anchor the estimate: an assistant message with usage, not a summary
 * (a summary's usage measures the compaction input, not the conversation), newer than the
 * boundary's summary (a kept tail message's usage predates the compaction). The last step-finish
 * part's usage wins over the message total, which may add several requests up.
 */
export function findAnchor(messages: WithParts[]): Anchor | undefined {
  let after = Number.NEGATIVE_INFINITY;
  for (const m of messages)
    if (m.info.role === 'assistant' && m.info.summary) after = Math.max(after, m.info.seq);
  let best: Anchor | undefined;
  for (const m of messages) {
    if (m.info.role !== 'assistant' || m.info.summary || m.info.seq <= after) continue;
    if (best && m.info.seq <= best.messageSeq) continue;
    let usage = m.info.usage;
    for (const p of m.parts) if (p.type === 'step-finish') usage = p.usage;
    if (!usage || promptTokens(usage) === 0) continue;
    best = { usage, messageSeq: m.info.seq, time: m.info.time.completed ?? m.info.time.created };
  }
  return best;
}

export interface EstimateInput {
  /** From findAnchor; undefined before the first report (or right after a compaction). */
  anchor?: Anchor | undefined;
  /** The filtered history (filterCompacted output) the next call will be built from. */
  messages: WithParts[];
  /** Provider tokens per tiktoken token learned for this session (learnRatio); else the prior. */
  ratio?: number | undefined;
  /** Reasoning is sent back to the model, so it counts. */
  resendsReasoning: boolean;
  /** The ratio before any learning; default familyPrior(model). */
  tokenizerPrior?: number | undefined;
  /** The agent's model ref, for the default prior. */
  model?: string | undefined;
  /** tiktoken count of system blocks and tool definitions; used only without an anchor (the anchor includes them). */
  overhead?: number;
}

/** Provider-scale token count of the next prompt. */
export function estimateNextPrompt(input: EstimateInput): number {
  const ratio = input.ratio ?? input.tokenizerPrior ?? (input.model ? familyPrior(input.model) : 1);
  const { anchor, messages, resendsReasoning } = input;
  if (!anchor) {
    let all = input.overhead ?? 0;
    for (const m of messages) all += tokensOf(m, resendsReasoning);
    return Math.ceil(all * ratio);
  }
  const u = anchor.usage;
  // The reply becomes input next time, minus reasoning when the provider is not sent it back.
  const base = promptTokens(u) + u.output + (resendsReasoning ? u.reasoning : 0);
  let added = 0;
  for (const m of messages) {
    if (m.info.seq > anchor.messageSeq) added += tokensOf(m, resendsReasoning);
    else if (m.info.seq === anchor.messageSeq) {
      // Its text and calls are in usage.output; the results of its calls came after the report.
      for (const p of m.parts) if (p.type === 'tool') added += storedOutputTokens(p);
    } else if (anchor.time !== undefined) added -= prunedSince(m, anchor.time);
  }
  return Math.max(0, base + Math.ceil(added * ratio));
}

function tokensOf(m: WithParts, resendsReasoning: boolean): number {
  let sum = 0;
  for (const p of m.parts) if (p.type !== 'reasoning' || resendsReasoning) sum += storedTokens(p);
  return sum;
}

// Outputs pruned after the report were in its input and are now a short placeholder; without this,
// the estimate would stay high after a prune and ask for a compaction the prune made unnecessary.
function prunedSince(m: WithParts, time: number): number {
  let saved = 0;
  for (const p of m.parts) {
    if (p.type !== 'tool' || p.state.status !== 'completed') continue;
    const compacted = p.state.time.compacted;
    if (compacted === undefined || compacted <= time) continue;
    const full = p.outputTokens ?? estimateTokens(p.state.output);
    saved += Math.max(0, full - storedOutputTokens(p));
  }
  return saved;
}

/**
 * Provider tokens per tiktoken (o200k_base) token by model family, measured on real prompts;
 * unknown families get a middle value (an overestimate only compacts a little early).
 */
export function familyPrior(modelRef: string): number {
  const id = modelRef.toLowerCase();
  if (/claude|anthropic/.test(id)) return 1.25;
  if (/gemini|gemma/.test(id)) return 1.2;
  if (/deepseek/.test(id)) return 1.1;
  if (/llama/.test(id)) return 1.05;
  if (/(^|\/)(gpt|o\d|chatgpt|codex)|openai\/|gpt-oss/.test(id)) return 1.0;
  return 1.1;
}

/** Below this many tiktoken tokens a sample is mostly system-prompt noise and is not learned from. */
export const RATIO_MIN_SAMPLE = 1_000;
/** Weight of a new sample in the moving average. */
export const RATIO_ALPHA = 0.3;

/**
 * Exponential moving average of provider/tiktoken over a session's calls. `providerInput` is the
 * request's promptTokens (input + cache), `tiktokenInput` the tiktoken count of the same request.
 * Samples are clamped to [0.5, 3] so one odd report (a provider that bills images) cannot wreck it.
 */
export function learnRatio(prevRatio: number, providerInput: number, tiktokenInput: number): number {
  if (!(tiktokenInput >= RATIO_MIN_SAMPLE) || !(providerInput > 0)) return prevRatio;
  const sample = Math.min(3, Math.max(0.5, providerInput / tiktokenInput));
  return prevRatio + RATIO_ALPHA * (sample - prevRatio);
}
