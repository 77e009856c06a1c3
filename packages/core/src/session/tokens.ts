// Token counting: the Tokenizer interface (tiktoken lives in the llm package), a cheap CJK-aware
// estimate, and what each part contributes to the model input. Counts are computed once, when a
// part is written (`part.tokens`); policy code reads them and never re-tokenizes history.

import type { Part, ToolPart } from '../schema/part.ts';
import {
  CLEARED_TOOL_OUTPUT,
  COMPACTION_QUESTION,
  INTERRUPTED_TOOL_OUTPUT,
  SUBTASK_TEXT,
} from './placeholders.ts';

/** Counts tokens of one text with a model's encoding (o200k_base when unknown). */
export interface Tokenizer {
  count(text: string): number;
  /** Encoding name, e.g. `o200k_base`, or `estimate`. */
  name: string;
}

/** Untrusted text beyond this many characters is estimated, not tokenized exactly. */
export const EXACT_COUNT_CAP_CHARS = 200_000;

/**
 * Flat cost of a file part. Providers bill images by size (85–1,600 tokens for OpenAI), which
 * core cannot see; this keeps attachments visible in the estimate without pretending to precision.
 */
export const FILE_PART_TOKENS = 256;

// Han, kana, Hangul, CJK punctuation and full-width forms: about one token per character in
// o200k_base and cl100k_base, where Latin text averages four characters per token.
function isCjk(code: number): boolean {
  return (
    (code >= 0x1100 && code <= 0x11ff) ||
    (code >= 0x2e80 && code <= 0x9fff) ||
    (code >= 0xa960 && code <= 0xa97f) ||
    (code >= 0xac00 && code <= 0xd7af) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xffef)
  );
}

/** ceil(non-CJK chars / 4 + CJK chars): cheap, no tokenizer, within ~20 % of tiktoken on prose. */
export function estimateTokens(text: string): number {
  let cjk = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // Supplementary CJK ideographs (U+20000–U+3FFFF) arrive as a high surrogate D840–D8BF plus a
    // low surrogate: count the pair as one CJK character.
    if (code >= 0xd840 && code <= 0xd8bf && i + 1 < text.length) {
      cjk++;
      i++;
    } else if (isCjk(code)) cjk++;
    else other++;
  }
  return Math.ceil(other / 4 + cjk);
}

/** A Tokenizer made of `estimateTokens`, for places with no encoding at hand. */
export const estimateTokenizer: Tokenizer = { name: 'estimate', count: estimateTokens };

/**
 * Exact count of the first `cap` characters, estimate for the rest: tokenizing megabytes of
 * untrusted tool output exactly would stall the worker for no useful precision.
 */
export function countCapped(tokenizer: Tokenizer, text: string, cap: number = EXACT_COUNT_CAP_CHARS): number {
  if (text.length <= cap) return tokenizer.count(text);
  return tokenizer.count(text.slice(0, cap)) + estimateTokens(text.slice(cap));
}

// Texts every step counts again (system blocks, tool definitions): their counts per tokenizer,
// bounded by the total characters kept, oldest first out.
const MEMO_MAX_CHARS = 4_000_000;
const memos = new WeakMap<Tokenizer, { counts: Map<string, number>; chars: number }>();

/**
 * countCapped, remembered per tokenizer: for the few texts that are the same on every step (the
 * request's system blocks and tool definitions). Keeps at most 4 M characters of keys.
 */
export function countCappedMemo(tokenizer: Tokenizer, text: string): number {
  let memo = memos.get(tokenizer);
  if (memo === undefined) {
    memo = { counts: new Map(), chars: 0 };
    memos.set(tokenizer, memo);
  }
  const known = memo.counts.get(text);
  if (known !== undefined) return known;
  const count = countCapped(tokenizer, text);
  if (text.length > MEMO_MAX_CHARS / 4) return count;
  memo.counts.set(text, count);
  memo.chars += text.length;
  for (const key of memo.counts.keys()) {
    if (memo.chars <= MEMO_MAX_CHARS) break;
    memo.counts.delete(key);
    memo.chars -= key.length;
  }
  return count;
}

/** The text a tool part's result shows the model (before any compaction-input cap). */
export function toolResultText(part: ToolPart): string {
  const state = part.state;
  switch (state.status) {
    case 'completed':
      return state.time.compacted !== undefined ? CLEARED_TOOL_OUTPUT : state.output;
    case 'error':
      return state.interrupted && state.output ? state.output : state.error;
    default:
      return INTERRUPTED_TOOL_OUTPUT;
  }
}

/** Tokens of a tool call's input as the model sees it: its name and JSON arguments. */
export function toolInputTokens(part: ToolPart, tokenizer: Tokenizer): number {
  return countCapped(tokenizer, part.tool) + countCapped(tokenizer, JSON.stringify(part.state.input) ?? '');
}

/** Tokens of a tool part's result alone; the value to store in `outputTokens`. */
export function toolOutputTokens(part: ToolPart, tokenizer: Tokenizer): number {
  return countCapped(tokenizer, toolResultText(part));
}

/** What a part contributes to the model input; the value to store in `part.tokens`. */
export function partTokens(part: Part, tokenizer: Tokenizer): number {
  switch (part.type) {
    case 'text':
      return part.ignored ? 0 : countCapped(tokenizer, part.text);
    case 'reasoning':
      return countCapped(tokenizer, part.text);
    case 'tool':
      return toolInputTokens(part, tokenizer) + toolOutputTokens(part, tokenizer);
    case 'file':
      return FILE_PART_TOKENS;
    case 'compaction':
      return tokenizer.count(COMPACTION_QUESTION);
    case 'subtask':
      return tokenizer.count(SUBTASK_TEXT);
    default:
      return 0;
  }
}

/**
 * The part with `tokens` set (and `outputTokens` for a tool part), its result tokenized once:
 * `partTokens` of a tool part is its input plus its result, so counting both separately would
 * tokenize the result (up to 50 KiB) twice.
 */
export function countPart<P extends Part>(part: P, tokenizer: Tokenizer): P {
  if (part.type !== 'tool') return { ...part, tokens: partTokens(part, tokenizer) };
  const outputTokens = toolOutputTokens(part, tokenizer);
  return { ...part, tokens: toolInputTokens(part, tokenizer) + outputTokens, outputTokens };
}

/**
 * The stored count of a part, falling back to an estimate when a writer left it at 0 for a part
 * that does carry content (a policy decision must never see a huge output as free).
 */
export function storedTokens(part: Part): number {
  if (part.type === 'tool' && part.state.status === 'completed' && part.state.time.compacted !== undefined) {
    // Pruning only sets `time.compacted`; a count stored before it still holds the full output.
    if (part.tokens > 0 && part.outputTokens !== undefined) {
      return Math.max(0, part.tokens - part.outputTokens) + estimateTokens(CLEARED_TOOL_OUTPUT);
    }
    return partTokens(part, estimateTokenizer);
  }
  return part.tokens > 0 ? part.tokens : partTokens(part, estimateTokenizer);
}

/** Tokens a message adds to the prompt; reasoning counts only for models that are sent it back. */
export function messageTokens(message: { parts: Part[] }, resendsReasoning = false): number {
  let sum = 0;
  for (const part of message.parts) {
    if (part.type === 'reasoning' && !resendsReasoning) continue;
    sum += storedTokens(part);
  }
  return sum;
}

/** The stored result-only count of a tool part, with the same fallback. */
export function storedOutputTokens(part: ToolPart): number {
  // A pruned output shrank to the placeholder after its count was stored.
  if (part.state.status === 'completed' && part.state.time.compacted !== undefined) {
    return estimateTokens(CLEARED_TOOL_OUTPUT);
  }
  return part.outputTokens ?? estimateTokens(toolResultText(part));
}
