// The two compaction decisions made outside the step (docs/context.md §2, §3): after the prune pass
// the loop asked for, whether pruning made enough room or a compaction marker is still needed; and
// whether an idle session gets a background compaction. The prune and background jobs only carry
// out what these say.

import type { CompactionConfig, RuntimeFlags } from '../config.ts';
import type { SessionStatus } from '../schema/event.ts';
import type { WithParts } from '../schema/message.ts';
import { grewSinceCompaction } from './loop-guard.ts';
import { autoCompactEnabled, type ContextBudget } from './overflow.ts';
import { pendingCompaction } from './turn.ts';

export type AfterPruneAction =
  /** A marker written by an earlier run of this job (or another runner) is the one to run. */
  | { type: 'run-compaction'; messageId: string }
  /**
   * Back to the loop without a compaction: `auto-off` when automatic compaction was switched off
   * since the step asked (the step decides again, and fails if nothing fits), `enough-room` when
   * pruning alone brought the estimate under the trigger.
   */
  | { type: 'continue'; why: 'auto-off' | 'enough-room' }
  /** Write the compaction marker the step asked for and hand over to the compaction job. */
  | { type: 'create-compaction' };

export interface AfterPruneInput {
  /** The model view after the pass. */
  messages: WithParts[];
  compaction: Pick<CompactionConfig, 'auto'>;
  flags: Partial<RuntimeFlags> | undefined;
  /** The provider rejected the request: compact even if the estimate now fits. */
  rejected: boolean;
  /** The next prompt's estimate after the pass. */
  estimate: number;
  trigger: number;
}

/** The prune pass before a compaction (purpose `compact`) is done: what the loop does next. */
export function afterPrune(input: AfterPruneInput): AfterPruneAction {
  const pending = pendingCompaction(input.messages);
  if (pending) return { type: 'run-compaction', messageId: pending.message.info.id };
  if (!autoCompactEnabled(input.compaction, input.flags)) return { type: 'continue', why: 'auto-off' };
  if (!input.rejected && input.estimate < input.trigger) return { type: 'continue', why: 'enough-room' };
  return { type: 'create-compaction' };
}

export interface BackgroundInput {
  status: SessionStatus;
  /** The model view. */
  messages: WithParts[];
  compaction: Pick<CompactionConfig, 'auto' | 'growthMargin'>;
  flags: Partial<RuntimeFlags> | undefined;
  estimate: number;
  budget: Pick<ContextBudget, 'trigger' | 'background'>;
  /**
   * The session's last compaction result. Only read when it can matter: the caller may leave it
   * out while the estimate is below the background threshold.
   */
  lastCompactionTokensAfter: number | undefined;
}

/** Why an idle session gets no background compaction now; undefined when it should get one. */
export function backgroundSkipReason(input: BackgroundInput): string | undefined {
  if (input.status !== 'idle') return `session is ${input.status}`;
  if (!autoCompactEnabled(input.compaction, input.flags)) return 'automatic compaction is off';
  if (input.estimate < input.budget.background) return 'below the background threshold';
  if (pendingCompaction(input.messages)) return 'a compaction is already pending';
  // Never two automatic compactions in a row without growth (§5.6).
  const { growthMargin } = input.compaction;
  if (
    !grewSinceCompaction(input.estimate, input.lastCompactionTokensAfter, growthMargin, input.budget.trigger)
  ) {
    return 'no growth since the last compaction';
  }
  return undefined;
}

/**
 * An idle prune scheduled at step count `scheduledAt` (absent in older jobs: never skipped) whose
 * session moved on would write a second ledger row for that turn's step: skip it; that turn's end
 * schedules the next one.
 */
export function idlePruneObsolete(
  session: { stepCount: number; status: SessionStatus },
  scheduledAt: number | undefined,
): boolean {
  if (scheduledAt === undefined) return false;
  return session.stepCount !== scheduledAt || session.status !== 'idle';
}

/** A background compaction marker an earlier run of the background job left without a summary. */
export function resumableBackground(messages: WithParts[]): string | undefined {
  const pending = pendingCompaction(messages);
  return pending?.part.background ? pending.message.info.id : undefined;
}
