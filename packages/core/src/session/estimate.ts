// The pre-call overflow estimate (docs/context.md §2 point 1): the provider's own count of the last
// request, plus tiktoken counts of what was added since, scaled by a per-session provider/tiktoken
// ratio. Provider counts are the truth; tiktoken only has to measure the difference.

import type { TokenizerFamily } from '../config.ts';
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
 * The newest reply with usage that can anchor the estimate: not a summary (its usage measured the
 * compaction input) and newer than the boundary's summary (a kept tail's usage predates it). The
 * last step-finish's usage wins over the message total, which may add several requests up.
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
  /** Relative margin on the ratio-scaled part, for the bound (RatioState.margin); default 0. */
  margin?: number | undefined;
  /** Template tokens per message (MESSAGE_FRAMING_TOKENS for a real request); default 0. */
  framing?: number | undefined;
}

/** The next prompt in provider tokens: the best guess and the bound the fit checks use. */
export interface PromptEstimate {
  /** Best guess: what the provider is expected to report as the prompt. */
  tokens: number;
  /** tokens plus the margin on the part scaled by the ratio: what fit and overflow checks use. */
  bound: number;
  /** Built on the provider's last report (exact) rather than on tiktoken counts alone. */
  anchored: boolean;
  ratio: number;
  margin: number;
}

/**
 * Tokens a chat template adds around each message (role markers, separators): 3–5 in every
 * template measured (ChatML, Llama 3, OpenAI). Counted so that an estimate of a short context
 * (right after a compaction) is as good as one of a long context.
 */
export const MESSAGE_FRAMING_TOKENS = 4;

/**
 * tiktoken tokens of a whole request: overhead (system, tools), the messages and their framing,
 * the system message's framing and the reply's opening marker.
 */
export function requestTiktokens(
  messages: WithParts[],
  overhead: number,
  resendsReasoning: boolean,
  framing = MESSAGE_FRAMING_TOKENS,
): number {
  // The system message's framing and the reply's opening marker come with every request.
  let sum = overhead + 2 * framing;
  for (const m of messages) sum += tokensOf(m, resendsReasoning, framing);
  return sum;
}

/** Provider-scale token count of the next prompt (the best guess; see estimatePrompt for the bound). */
export function estimateNextPrompt(input: EstimateInput): number {
  return estimatePrompt(input).tokens;
}

/** The next prompt's estimate and bound: the anchor's report plus what came since, else all of it. */
export function estimatePrompt(input: EstimateInput): PromptEstimate {
  const ratio = input.ratio ?? input.tokenizerPrior ?? (input.model ? familyPrior(input.model) : 1);
  const margin = input.margin ?? 0;
  const framing = input.framing ?? 0;
  const { anchor, messages, resendsReasoning } = input;
  if (!anchor) {
    const scaled = requestTiktokens(messages, input.overhead ?? 0, resendsReasoning, framing) * ratio;
    return {
      tokens: Math.ceil(scaled),
      bound: Math.ceil(scaled * (1 + margin)),
      anchored: false,
      ratio,
      margin,
    };
  }
  const u = anchor.usage;
  // The reply becomes input next time, minus reasoning when the provider is not sent it back.
  const base = promptTokens(u) + u.output + (resendsReasoning ? u.reasoning : 0);
  let added = 0;
  for (const m of messages) {
    if (m.info.seq > anchor.messageSeq) added += tokensOf(m, resendsReasoning, framing);
    else if (m.info.seq === anchor.messageSeq) {
      // Its text and calls are in usage.output; the results of its calls came after the report.
      for (const p of m.parts) if (p.type === 'tool') added += storedOutputTokens(p) + framing;
    } else if (anchor.time !== undefined) added -= prunedSince(m, anchor.time);
  }
  const tokens = Math.max(0, base + Math.ceil(added * ratio));
  const bound = Math.max(0, base + Math.ceil(added * ratio * (added > 0 ? 1 + margin : 1)));
  return { tokens, bound, anchored: true, ratio, margin };
}

function tokensOf(m: WithParts, resendsReasoning: boolean, framing: number): number {
  let sum = framing;
  for (const p of m.parts) {
    if (p.type !== 'reasoning' || resendsReasoning) sum += storedTokens(p);
    // A tool result travels as its own message.
    if (p.type === 'tool') sum += framing;
  }
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

/** Provider tokens per tiktoken (o200k_base) token by tokenizer family, measured on real prompts. */
export const FAMILY_PRIORS: Record<TokenizerFamily, number> = {
  openai: 1.0,
  llama: 1.05,
  deepseek: 1.1,
  qwen: 1.1,
  mistral: 1.1,
  gemini: 1.2,
  claude: 1.25,
};

/**
 * The prior of a model whose tokenizer is unknown. Small open models served through llama.cpp or
 * Ollama use vocabularies of 32k–50k tokens and count 1.3–2.2× tiktoken; a prior in the middle
 * plus UNKNOWN_PRIOR_MARGIN puts the first request on the safe side of the window.
 */
export const UNKNOWN_FAMILY_PRIOR = 1.5;
/** Margin on the ratio-scaled part of an estimate before any report: unknown family, known family. */
export const UNKNOWN_PRIOR_MARGIN = 0.5;
export const KNOWN_PRIOR_MARGIN = 0.05;
/** Once reports arrived the margin starts here and shrinks with their size, to MIN_LEARNED_MARGIN. */
export const LEARNED_MARGIN = 0.1;
export const MIN_LEARNED_MARGIN = 0.01;
/** tiktoken tokens of reports after which the learned margin has halved. */
export const MARGIN_HALF_WEIGHT = 1_000;
/** The learned ratio's weight stops growing here, so it keeps following a drifting ratio. */
export const RATIO_WEIGHT_CAP = 50_000;

// Model ids are few per process; each lookup ran up to seven regular expressions on every step.
const FAMILY_MEMO_MAX = 256;
const familyMemo = new Map<string, TokenizerFamily | undefined>();

/** The tokenizer family a model id names, or undefined when it names none we know. */
export function tokenizerFamilyOf(modelRef: string): TokenizerFamily | undefined {
  if (familyMemo.has(modelRef)) return familyMemo.get(modelRef);
  const family = familyOfId(modelRef.toLowerCase());
  // Bounded: tenants name their own models; past the bound the memo starts over.
  if (familyMemo.size >= FAMILY_MEMO_MAX) familyMemo.clear();
  familyMemo.set(modelRef, family);
  return family;
}

function familyOfId(id: string): TokenizerFamily | undefined {
  if (/claude|anthropic/.test(id)) return 'claude';
  if (/gemini|gemma/.test(id)) return 'gemini';
  if (/deepseek/.test(id)) return 'deepseek';
  if (/qwen|qwq/.test(id)) return 'qwen';
  if (/mistral|mixtral|codestral|ministral|devstral/.test(id)) return 'mistral';
  if (/llama/.test(id)) return 'llama';
  // Loopline's bundled mock server (`compatible/mock…`) counts with o200k_base, as OpenAI does.
  if (/(^|\/)(gpt|o\d|chatgpt|codex)|openai\/|gpt-oss|(^|\/)mock/.test(id)) return 'openai';
  return undefined;
}

/** The prior ratio: the agent's `tokenizer` hint, else the family the model id names, else the unknown prior. */
export function familyPrior(modelRef: string, tokenizer?: TokenizerFamily): number {
  const family = tokenizer ?? tokenizerFamilyOf(modelRef);
  return family ? FAMILY_PRIORS[family] : UNKNOWN_FAMILY_PRIOR;
}

/** What a session knows about its provider/tiktoken ratio (sessions.token_ratio and its weight). */
export interface RatioState {
  /** The ratio to scale tiktoken counts with: learned, else the prior. */
  ratio: number;
  /** tiktoken tokens of the reports it was learned from; 0 = not learned yet. */
  weight: number;
  /** Relative margin added to the ratio-scaled part of a bound (fit checks, the overflow check). */
  margin: number;
}

/**
 * The ratio state of a session. A learned ratio is carried as it is across compactions (never
 * reset to a prior). A ratio stored without a weight (before weights were kept) counts as
 * learned from one full-size report.
 */
export function ratioState(input: {
  tokenRatio?: number | null | undefined;
  tokenRatioWeight?: number | null | undefined;
  model: string;
  tokenizer?: TokenizerFamily | undefined;
}): RatioState {
  if (input.tokenRatio != null && input.tokenRatio > 0 && input.tokenRatioWeight !== 0) {
    const weight = input.tokenRatioWeight ?? RATIO_WEIGHT_CAP;
    return { ratio: input.tokenRatio, weight, margin: learnedMargin(weight) };
  }
  const known = input.tokenizer !== undefined || tokenizerFamilyOf(input.model) !== undefined;
  return {
    ratio: familyPrior(input.model, input.tokenizer),
    weight: 0,
    margin: known ? KNOWN_PRIOR_MARGIN : UNKNOWN_PRIOR_MARGIN,
  };
}

function learnedMargin(weight: number): number {
  return Math.max(MIN_LEARNED_MARGIN, (LEARNED_MARGIN * MARGIN_HALF_WEIGHT) / (MARGIN_HALF_WEIGHT + weight));
}

/**
 * Learns the ratio from one report (provider promptTokens against requestTiktokens of the same
 * request): the first sets it, later ones are averaged in by size with a capped weight so it
 * follows drift; samples are clamped to [0.5, 4] so one odd report cannot wreck it.
 */
export function learnRatio(
  prev: Pick<RatioState, 'ratio' | 'weight'>,
  providerInput: number,
  tiktokenInput: number,
): { ratio: number; weight: number } {
  if (!(tiktokenInput > 0) || !(providerInput > 0)) return { ratio: prev.ratio, weight: prev.weight };
  const sample = Math.min(4, Math.max(0.5, providerInput / tiktokenInput));
  if (!(prev.weight > 0)) return { ratio: sample, weight: Math.min(RATIO_WEIGHT_CAP, tiktokenInput) };
  const ratio = (prev.ratio * prev.weight + sample * tiktokenInput) / (prev.weight + tiktokenInput);
  return { ratio, weight: Math.min(RATIO_WEIGHT_CAP, prev.weight + tiktokenInput) };
}

/**
 * A report under this share of the request it answers (tiktoken × the learned ratio) is taken for
 * a server that cut the start of the prompt (Ollama past `num_ctx`), not for a ratio to learn.
 */
export const CUT_PROMPT_SHARE = 0.6;

/**
 * What one step's report teaches: learnRatio's new ratio, unless the report is far below what was
 * sent while a ratio is known (`promptCut`): learning from it would make every later estimate short,
 * so the ratio stays as it was.
 */
export function learnFromReport(
  known: Pick<RatioState, 'ratio' | 'weight'>,
  providerInput: number,
  tiktokenInput: number,
): { ratio: number; weight: number; promptCut: boolean } {
  const promptCut =
    known.weight > 0 && providerInput > 0 && providerInput < CUT_PROMPT_SHARE * tiktokenInput * known.ratio;
  if (promptCut) return { ratio: known.ratio, weight: known.weight, promptCut };
  return { ...learnRatio(known, providerInput, tiktokenInput), promptCut };
}
