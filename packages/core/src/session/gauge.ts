// The context gauge (docs/context.md §2 and §5.7): how full the
// next prompt is against the two thresholds, and what each line of defence would free. Pure: the
// gateway's session and /context views are built from it. It never decides anything for the loop
// (decide/isOverflow do), but it reads the same numbers: contextBudget, estimateNextPrompt,
// planPrune and selectTail.
//
// `estimatedSavings` = what prune would free (planPrune over the view, cleared outputs replaced by
// their placeholder) + what a summary would remove (on the view after that prune, the head
// selectTail leaves, minus expectedSummaryTokens(head) = min(2,000, head / 10); with a compaction
// pending, the head before it), both in provider tokens (tiktoken counts × the session's ratio).

import type { CompactionConfig, ModelLimits, RuntimeFlags } from '../config.ts';
import type { WithParts } from '../schema/message.ts';
import type { Part } from '../schema/part.ts';
import { estimateNextPrompt, familyPrior, findAnchor } from './estimate.ts';
import { autoCompactEnabled, contextBudget } from './overflow.ts';
import { CLEARED_TOOL_OUTPUT } from './placeholders.ts';
import { planPrune, pruneOptions } from './prune.ts';
import { defaultTailBudget, selectTail } from './tail.ts';
import { countCappedMemo, estimateTokens, messageTokens, type Tokenizer } from './tokens.ts';
import { pendingCompaction } from './turn.ts';

/**
 * Upper bound of the expected size of a summary, in tiktoken tokens. The summary template (Goal,
 * Instructions, Discoveries, Accomplished, Relevant files) typically comes back at 500–2,000
 * tokens however long the head was; a short head gives a proportionally short summary.
 */
export const EXPECTED_SUMMARY_MAX = 2_000;
/** A summary of a short head is expected at about a tenth of it. */
export const EXPECTED_SUMMARY_FRACTION = 0.1;

/** min(2,000, ceil(head / 10)): what a summary of `headTokens` is expected to cost in the next prompt. */
export function expectedSummaryTokens(headTokens: number): number {
  return Math.min(EXPECTED_SUMMARY_MAX, Math.ceil(Math.max(0, headTokens) * EXPECTED_SUMMARY_FRACTION));
}

/** The CompactionConfig fields the gauge reads (defaults apply when absent). */
export type GaugeCompaction = Partial<
  Pick<
    CompactionConfig,
    | 'auto'
    | 'prune'
    | 'reserved'
    | 'triggerRatio'
    | 'backgroundRatio'
    | 'tailTurns'
    | 'preserveRecentTokens'
    | 'protectedTools'
    | 'pruneProtect'
    | 'pruneMinimum'
    | 'pruneProtectSteps'
  >
>;

export interface GaugeInput {
  /** The filtered history (filterCompacted output): what the next call is built from. */
  messages: WithParts[];
  /** The model's limits in effect (the agent's, else the catalog's). */
  limits: ModelLimits;
  compaction?: GaugeCompaction | undefined;
  flags?: Partial<RuntimeFlags> | undefined;
  /** The agent's model ref, for the tokenizer prior. */
  model?: string | undefined;
  /** Template tokens per message (MESSAGE_FRAMING_TOKENS, as the worker counts); default 0. */
  framing?: number;
  /** Provider tokens per tiktoken token learned for this session; default familyPrior(model). */
  ratio?: number | undefined;
  resendsReasoning?: boolean | undefined;
  /** tiktoken count of the system blocks; counted only before the first provider report. */
  overhead?: number | undefined;
}

/** Whether the session should compact now, what it would save, and why. */
export interface CompactionSuggestion {
  /** The next prompt is at or above the background threshold (and the model has a known window). */
  shouldCompact: boolean;
  /** Provider-scale tokens a prune plus a summary compaction would remove from the next prompt now. */
  estimatedSavings: number;
  /** One sentence saying why. */
  reason: string;
}

export interface ContextGauge {
  /** Provider-scale estimate of the next prompt (estimateNextPrompt, anchored on the last report). */
  used: number;
  usable: number;
  /** Compaction starts at this many tokens. */
  trigger: number;
  /** An idle session at or above this many tokens is compacted in the background. */
  background: number;
  /** used / trigger in percent, one decimal; 0 when the trigger is 0. */
  percentOfTrigger: number;
  /** What the prune job would clear now (provider scale, net of the placeholder); zero when pruning is off. */
  pruneWouldFree: { parts: number; tokens: number };
  suggestion: CompactionSuggestion;
}

/** A tool definition as the model is given it. */
export interface ToolDefinition {
  name: string;
  description?: string | undefined;
  inputSchema: unknown;
}

/**
 * tiktoken count of a request's fixed part: the system blocks, plus the tool definitions as JSON
 * (the way providers render them). The estimate counts it only before the first provider report.
 */
export function requestOverhead(
  tokenizer: Tokenizer,
  system: readonly string[],
  tools: readonly ToolDefinition[],
): number {
  // The same on every step of a session: counted once per process (countCappedMemo).
  return (
    countCappedMemo(tokenizer, system.join('\n')) +
    (tools.length > 0 ? countCappedMemo(tokenizer, JSON.stringify(tools)) : 0)
  );
}

/** Pruning is on: the agent's `compaction.prune` and not LOOPLINE_DISABLE_PRUNE. */
export function pruneEnabled(
  compaction: Partial<Pick<CompactionConfig, 'prune'>> | undefined,
  flags: Partial<RuntimeFlags> | undefined,
): boolean {
  return compaction?.prune !== false && flags?.disablePrune !== true;
}

/** The gauge of a session: fullness against the thresholds and `estimatedSavings` (file header). */
export function contextGauge(input: GaugeInput): ContextGauge {
  const { messages, limits, flags } = input;
  const compaction = input.compaction ?? {};
  const resendsReasoning = input.resendsReasoning ?? false;
  const ratio = input.ratio ?? (input.model ? familyPrior(input.model) : 1);
  const budget = contextBudget(limits, compaction);
  const used = estimateNextPrompt({
    anchor: findAnchor(messages),
    messages,
    ratio,
    framing: input.framing,
    resendsReasoning,
    overhead: input.overhead ?? 0,
  });

  const pruneOn = pruneEnabled(compaction, flags);
  const plan = pruneOn
    ? planPrune(messages, pruneOptions(compaction, budget.usable))
    : { partIds: [], tokens: 0 };
  const pruneFreed = Math.max(0, plan.tokens - plan.partIds.length * estimateTokens(CLEARED_TOOL_OUTPUT));

  const pruned = markPruned(messages, new Set(plan.partIds));
  const pending = pendingCompaction(pruned);
  const before = pending ? pruned.filter((m) => m.info.seq < pending.message.info.seq) : pruned;
  const { head } = selectTail(before, {
    ...(compaction.tailTurns !== undefined ? { tailTurns: compaction.tailTurns } : {}),
    budget: compaction.preserveRecentTokens ?? defaultTailBudget(budget.usable),
  });
  let headTokens = 0;
  for (const m of head) headTokens += messageTokens(m, resendsReasoning);
  const summaryFreed = Math.max(0, headTokens - expectedSummaryTokens(headTokens));

  const pruneTokens = Math.ceil(pruneFreed * ratio);
  const estimatedSavings = Math.ceil((pruneFreed + summaryFreed) * ratio);
  const percentOfTrigger = budget.trigger > 0 ? Math.round((used / budget.trigger) * 1000) / 10 : 0;
  const suggestion = suggest({
    used,
    trigger: budget.trigger,
    background: budget.background,
    percentOfTrigger,
    pruneTokens,
    estimatedSavings,
    knownWindow: limits.context > 0,
    auto: autoCompactEnabled(compaction, flags),
    pending: pending !== undefined,
  });
  return {
    used,
    usable: budget.usable,
    trigger: budget.trigger,
    background: budget.background,
    percentOfTrigger,
    pruneWouldFree: { parts: plan.partIds.length, tokens: pruneTokens },
    suggestion,
  };
}

// The view with the planned parts marked as pruned (their stored counts then shrink to the placeholder).
function markPruned(messages: WithParts[], partIds: ReadonlySet<string>): WithParts[] {
  if (partIds.size === 0) return messages;
  return messages.map((m) => {
    if (!m.parts.some((p) => partIds.has(p.id))) return m;
    const parts = m.parts.map((p): Part => {
      if (!partIds.has(p.id) || p.type !== 'tool' || p.state.status !== 'completed') return p;
      return { ...p, state: { ...p.state, time: { ...p.state.time, compacted: p.state.time.end } } };
    });
    return { ...m, parts };
  });
}

interface SuggestInput {
  used: number;
  trigger: number;
  background: number;
  percentOfTrigger: number;
  pruneTokens: number;
  estimatedSavings: number;
  knownWindow: boolean;
  auto: boolean;
  pending: boolean;
}

const n = (x: number): string => x.toLocaleString('en-US');

function suggest(s: SuggestInput): CompactionSuggestion {
  const { estimatedSavings } = s;
  const at = `The next prompt (~${n(s.used)} tokens, ${s.percentOfTrigger}% of the trigger)`;
  if (!s.knownWindow)
    return {
      shouldCompact: false,
      estimatedSavings,
      reason:
        "The model's context window is unknown (limits.context is 0), so the session is never compacted automatically.",
    };
  if (s.pending)
    return {
      shouldCompact: false,
      estimatedSavings,
      reason: 'A compaction is already pending; it runs before the next model call.',
    };
  const pruneNote = (limit: number, name: string) =>
    s.pruneTokens > 0 && s.used - s.pruneTokens < limit
      ? ` Pruning old tool outputs alone (~${n(s.pruneTokens)} tokens) would bring it under the ${name}.`
      : '';
  if (s.used >= s.trigger)
    return {
      shouldCompact: true,
      estimatedSavings,
      reason:
        `${at} has reached the compaction trigger (${n(s.trigger)}): the session must compact before the next model call` +
        (s.auto
          ? ', and will do so automatically.'
          : '; automatic compaction is off, so request a manual compaction.') +
        pruneNote(s.trigger, 'trigger'),
    };
  if (s.used >= s.background)
    return {
      shouldCompact: true,
      estimatedSavings,
      reason:
        `${at} is above the background threshold (${n(s.background)})` +
        (s.auto
          ? ': an idle session is compacted in the background so that the next turn starts with room to spare.'
          : `; automatic compaction is off, and compacting now would free about ${n(estimatedSavings)} tokens.`) +
        pruneNote(s.background, 'background threshold'),
    };
  return {
    shouldCompact: false,
    estimatedSavings,
    reason: `${at} is below the background threshold (${n(s.background)}); no compaction is needed.`,
  };
}
