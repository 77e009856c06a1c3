// The context budget of a model and the overflow test (docs/context.md §2), exactly as specified:
// the same numbers decide the pre-call check, the step-finish check and the idle background job.

import type { CompactionConfig, ModelLimits, RuntimeFlags } from '../config.ts';
import { OUTPUT_TOKEN_MAX } from '../config.ts';

/** The budget knobs of CompactionConfig (defaults apply when absent). */
export type BudgetConfig = Partial<Pick<CompactionConfig, 'reserved' | 'triggerRatio' | 'backgroundRatio'>>;

export interface ContextBudget {
  /** Output tokens requested per call: min(limit.output, 32k), or 32k when the limit is 0. */
  maxOutput: number;
  /** Kept free for the reply when the model has an input limit. */
  reserved: number;
  /** Input tokens a prompt may use. */
  usable: number;
  /** Compact at or above this count. */
  trigger: number;
  /** An idle session at or above this count gets a background compaction. */
  background: number;
}

export const DEFAULT_BACKGROUND_RATIO = 0.8;

/** A model's window as output reserve, usable input and compaction thresholds (docs/context.md §2). */
export function contextBudget(limits: ModelLimits, compaction: BudgetConfig = {}): ContextBudget {
  const maxOutput = Math.min(limits.output, OUTPUT_TOKEN_MAX) || OUTPUT_TOKEN_MAX;
  const reserved = compaction.reserved ?? Math.min(20_000, maxOutput);
  // Upstream ignores `reserved` without an input limit; an explicit one applies in both branches.
  const usable = Math.max(
    0,
    limits.input ? limits.input - reserved : limits.context - maxOutput - (compaction.reserved ?? 0),
  );
  const trigger = compaction.triggerRatio ? Math.floor(usable * compaction.triggerRatio) : usable;
  const background = Math.floor(trigger * (compaction.backgroundRatio ?? DEFAULT_BACKGROUND_RATIO));
  return { maxOutput, reserved, usable, trigger, background };
}

/** Automatic compaction is on: the agent's `compaction.auto` and not LOOPLINE_DISABLE_AUTOCOMPACT. */
export function autoCompactEnabled(
  compaction: Partial<Pick<CompactionConfig, 'auto'>> | undefined,
  flags: Partial<RuntimeFlags> | undefined,
): boolean {
  return compaction?.auto !== false && flags?.disableAutocompact !== true;
}

export interface OverflowInput {
  /** Provider-scale token count: `usageCount(usage)` after a step, or the next-prompt estimate before one. */
  count: number;
  /** The model's limits; unknown limits (or context 0) never overflow. */
  limits: ModelLimits | undefined;
  compaction?: BudgetConfig & Partial<Pick<CompactionConfig, 'auto'>>;
  flags?: Partial<RuntimeFlags>;
}

/** `auto && limit.context > 0 && count >= trigger`. */
export function isOverflow(input: OverflowInput): boolean {
  if (!autoCompactEnabled(input.compaction, input.flags)) return false;
  if (!input.limits || input.limits.context <= 0) return false;
  return input.count >= contextBudget(input.limits, input.compaction).trigger;
}

/**
 * The request cannot fit at all: count above the model's input limit, or above context minus the
 * requested output. With automatic compaction off this is where a step ends with
 * ContextOverflowError instead of paying for a call the provider will reject.
 */
export function exceedsWindow(count: number, limits: ModelLimits | undefined): boolean {
  if (!limits || limits.context <= 0) return false;
  const maxOutput = Math.min(limits.output, OUTPUT_TOKEN_MAX) || OUTPUT_TOKEN_MAX;
  return count > (limits.input || limits.context - maxOutput);
}

export interface RequestFit {
  /** prompt + output fits the context (and the prompt the input limit, when there is one). */
  fits: boolean;
  /** max_tokens to ask for: the wanted output, cut to the room the window leaves. */
  output: number;
}

/**
 * Whether a request (`prompt`: a bound in provider tokens) fits the window with its output, and how
 * much output it may ask for; every request Loopline sends is sized with this.
 */
export function fitRequest(prompt: number, limits: ModelLimits | undefined, wanted?: number): RequestFit {
  const cap = limits ? Math.min(limits.output, OUTPUT_TOKEN_MAX) || OUTPUT_TOKEN_MAX : OUTPUT_TOKEN_MAX;
  const want = Math.max(1, Math.min(wanted ?? cap, cap));
  if (!limits || limits.context <= 0) return { fits: true, output: want };
  const room = Math.max(0, limits.context - prompt);
  const inputOk = limits.input === undefined || prompt <= limits.input;
  return { fits: inputOk && prompt + want <= limits.context, output: Math.max(1, Math.min(want, room)) };
}
