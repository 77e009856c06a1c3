// Which part counts a step may take from the provider's report instead of the tokenizer
// (docs/context.md §2, "Counts from the report"). The model's own output is already counted by the
// provider (`usage.output`); once the session's provider/tiktoken ratio is learned, that count
// divided by the ratio is a tiktoken-scale count as good as tokenizing the text again. Tool results
// are not in any report yet and are always counted; a result whose count is already known (the
// truncation counted it, the call's input was counted on the stream) is not counted twice.

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
 * A derived total below this share of the cheap estimate of the same text (or above
 * DERIVE_MAX_SHARE of it) means the report does not measure these parts (a server that counts
 * something else, or folds hidden reasoning into the output): they are tokenized instead.
 */
export const DERIVE_MIN_SHARE = 0.5;
export const DERIVE_MAX_SHARE = 3;

/**
 * The text of a part the provider counted in `usage.output`: a text part's text, a tool call's name
 * and JSON arguments. Undefined for anything else (reasoning is billed apart and may be shown only
 * as a summary; other kinds are not model output), which keeps its tokenizer count.
 */
export function modelOutputText(part: Part): string | undefined {
  if (part.type === 'text') return part.ignored ? undefined : part.text;
  if (part.type === 'tool') return part.tool + (JSON.stringify(part.state.input) ?? '');
  return undefined;
}

/**
 * Tiktoken-scale counts of the model's output parts of one step, from the step's report:
 * `usage.output / ratio`, shared among the parts by length, each share rounded up (their sum never
 * falls below the report). One entry per part, undefined for parts the report does not cover (they
 * are tokenized). The whole result is undefined — tokenize everything — when the ratio is not
 * learned yet (a prior could be off by half), the report has no output count, no part is covered,
 * or the derived total is implausible against the cheap estimate of the same text.
 */
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

/**
 * The part with its counts set from a derived count of its model output (deriveOutputTokens): a
 * text part's `tokens`; a tool part's `tokens` (its input's share plus its result as it stands —
 * a pending call's placeholder, an invalid call's error — which the tokenizer still counts) and
 * `outputTokens`.
 */
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
 * A finished tool part (`done`) with its counts, counting only what is new: the input's count is
 * taken from the call as it was stored (`call.tokens - call.outputTokens`) when the input is the
 * same object, and the result's from `outputTokens` when the caller knows it exactly (the
 * truncation counted the same text with the same tokenizer). Otherwise they are tokenized.
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
