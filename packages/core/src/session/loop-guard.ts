// The no-loop guard of summary compaction (docs/context.md, "Never loop"): one decision for every
// path that wants a compaction — the pre-call estimate in decide() and the provider rejecting a
// request as too long in the step job — so both count the same way.
//
// What bounds a loop is progress, not the number of compactions in a turn: a long single-turn
// task may compact many times, each followed by real work. `maxIterations` bounds compactions in a
// row with no completed model step between them; `maxCompactionsPerTurn` (0 = none) is an
// optional cost cap per user turn.

import type { CompactionConfig, RuntimeFlags } from '../config.ts';
import { type ErrorData, errorData } from '../errors.ts';
import type { WithParts } from '../schema/message.ts';
import { unansweredRequest } from './compaction-range.ts';
import { bySeq, compactionPartOf } from './history.ts';
import { autoCompactEnabled } from './overflow.ts';
import { compactionsThisTurn } from './turn.ts';

/**
 * A model step that came back and was recorded: a reply (not a summary) with a finish and no
 * error. Interrupted, failed or rejected steps are not progress.
 */
export function isCompletedStep(msg: WithParts): boolean {
  const info = msg.info;
  return (
    info.role === 'assistant' &&
    info.summary !== true &&
    info.finish !== undefined &&
    info.finish !== 'interrupted' &&
    info.finish !== 'error' &&
    info.error === undefined
  );
}

/**
 * Compactions since the newest completed model step; a part's `streak` fixes the count, so it
 * survives a boundary that cut the earlier ones out of view.
 */
export function compactionsInARow(messages: WithParts[]): number {
  const sorted = bySeq(messages);
  let counted = 0;
  for (let i = sorted.length - 1; i >= 0; i--) {
    const msg = sorted[i]!;
    if (isCompletedStep(msg)) return counted;
    const part = compactionPartOf(msg);
    if (!part) continue;
    counted++;
    if (part.streak !== undefined) return part.streak + counted - 1;
  }
  return counted;
}

export type CompactionVerdict =
  /**
   * Write a compaction marker: `iteration` is its number in the user turn, `streak` its number in
   * the current run of compactions without progress; `overflow` when the unanswered newest message
   * is the user's own request (replayed after the summary instead of the continue message).
   */
  | { type: 'create-compaction'; overflow: boolean; iteration: number; streak: number }
  | { type: 'fail'; error: ErrorData };

export interface CompactionGuardInput {
  /** The model view (filterCompacted output). */
  messages: WithParts[];
  compaction: Pick<CompactionConfig, 'auto' | 'maxIterations'> &
    Partial<Pick<CompactionConfig, 'maxCompactionsPerTurn'>>;
  flags?: Partial<RuntimeFlags> | undefined;
  /** The provider rejected the request (rather than the estimate predicting it). */
  rejected?: boolean;
}

/** The context must shrink: compact, or end the turn with the error that says why it cannot. */
export function compactionVerdict(input: CompactionGuardInput): CompactionVerdict {
  const { messages, compaction } = input;
  if (!autoCompactEnabled(compaction, input.flags)) {
    const message = input.rejected ? 'the provider rejected the request as too long' : undefined;
    return { type: 'fail', error: errorData('ContextOverflowError', message) };
  }
  const streak = compactionsInARow(messages);
  if (streak >= compaction.maxIterations) {
    return {
      type: 'fail',
      error: errorData(
        'MaxCompactionReachedError',
        `${streak} compactions in a row without a completed model step; the context cannot shrink enough to continue`,
        { compactions: streak, limit: 'maxIterations' },
      ),
    };
  }
  const iteration = compactionsThisTurn(messages);
  const perTurn = compaction.maxCompactionsPerTurn ?? 0;
  if (perTurn > 0 && iteration >= perTurn) {
    return {
      type: 'fail',
      error: errorData(
        'MaxCompactionReachedError',
        `${iteration} compactions in this user turn (maxCompactionsPerTurn)`,
        { compactions: iteration, limit: 'maxCompactionsPerTurn' },
      ),
    };
  }
  return {
    type: 'create-compaction',
    overflow: unansweredRequest(messages) !== undefined,
    iteration: iteration + 1,
    streak: streak + 1,
  };
}

/**
 * The context grew by `growthMargin` of the trigger since the last compaction (or there was none):
 * only then may an automatic one fire again, so one that left it near the trigger does not repeat.
 */
export function grewSinceCompaction(
  estimate: number,
  tokensAfter: number | undefined,
  growthMargin: number,
  trigger: number,
): boolean {
  return tokensAfter === undefined || estimate - tokensAfter >= growthMargin * trigger;
}
