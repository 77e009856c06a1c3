// Which part counts a step may take from the provider's report instead of the tokenizer
// (docs/context.md §2, "Counts from the report"). The model's own output is already counted by the
// provider (`usage.output`); once the session's provider/tiktoken ratio is learned, that count
// divided by the ratio is a tiktoken-scale count as good as tokenizing the text again. Tool results
// are not in any report yet and are always counted; a result whose count is already known (the
// truncation counted it, the call's input was counted on the stream) is not counted twice.
//
// deriveOutputTokens shares `usage.output / ratio` among the output parts by length (each share
// rounded up, so the sum never falls below the report). It derives nothing, and everything is
// tokenized, while the ratio is not learned (a prior can be off by half), without an output
// count, when no part is covered, or when the total is implausible against the cheap estimate.

import type { Part, ToolPart } from '../schema/part.ts';
import type { Usage } from '../schema/usage.ts';
import type { RatioState } from './estimate.ts';
import {
  countCappedMemo,
  estimateTokens,
  type Tokenizer,
  toolInputTokens,
  toolOutputTokens,
  toolResultText,
} from './tokens.ts';

/**
 * Outside [MIN, MAX] × the cheap estimate, the report does not measure these parts (a server that
 * counts something else, or folds hidden reasoning into the output): they are tokenized instead.
 */
export const DERIVE_MIN_SHARE = 0.5;
export const DERIVE_MAX_SHARE = 3;

/**
 * The text the provider counted in `usage.output` (a text, a tool call's name and arguments);
 * undefined for the rest (reasoning is billed apart and may be shown only as a summary).
 */
export function modelOutputText(part: Part): string | undefined {
  if (part.type === 'text') return part.ignored ? undefined : part.text;
  if (part.type === 'tool') return part.tool + (JSON.stringify(part.state.input) ?? '');
  return undefined;
}

/** Tiktoken-scale counts of a step's output parts from its report, or undefined: tokenize (file header). */
export function deriveOutputTokens(
  parts: Part[],
  usage: Usage | undefined,
  ratio: Pick<RatioState, 'ratio' | 'weight'>,
): Array<number | undefined> | undefined {
  if (!usage || !(usage.output > 0) || !(ratio.weight > 0) || !(ratio.ratio > 0)) return undefined;
  const texts = parts.map(modelOutputText);
  let chars = 0;
  let estimate = 0;
  for (const text of texts) {
    if (text === undefined) continue;
    chars += text.length;
    estimate += estimateTokens(text);
  }
  if (chars === 0) return undefined;
  const total = usage.output / ratio.ratio;
  if (total < DERIVE_MIN_SHARE * estimate || total > DERIVE_MAX_SHARE * estimate) return undefined;
  return texts.map((text) => (text === undefined ? undefined : Math.ceil((total * text.length) / chars)));
}

/** The part with counts from its derived output count (a tool part's result is still tokenized). */
export function withOutputTokens<P extends Part>(part: P, derived: number, tokenizer: Tokenizer): P {
  if (part.type !== 'tool') return { ...part, tokens: derived };
  // A call not run yet shows the same placeholder every time: counted once per process.
  const waiting = part.state.status === 'pending' || part.state.status === 'running';
  const outputTokens = waiting
    ? countCappedMemo(tokenizer, toolResultText(part))
    : toolOutputTokens(part, tokenizer);
  return { ...part, tokens: derived + outputTokens, outputTokens };
}

/**
 * A finished tool part with its counts, counting only what is new: the input's from the stored call
 * when it is the same object, the result's from `outputTokens` when the caller knows it exactly.
 */
export function countToolResult(
  done: ToolPart,
  call: ToolPart,
  tokenizer: Tokenizer,
  outputTokens?: number,
): ToolPart {
  const out = outputTokens ?? toolOutputTokens(done, tokenizer);
  const sameInput = call.state.input === done.state.input && call.outputTokens !== undefined;
  const known = sameInput && call.tokens > 0 ? call.tokens - (call.outputTokens ?? 0) : -1;
  const input = known >= 0 ? known : toolInputTokens(done, tokenizer);
  return { ...done, tokens: input + out, outputTokens: out };
}
