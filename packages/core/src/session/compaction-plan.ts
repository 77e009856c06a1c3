// The two shapes a compaction can take (docs/context.md §5.2, §5.6): keep a verbatim tail and
// summarise the head, or summarise everything. For each, what the summary input is, whether the
// user's request must be replayed, and how large the next prompt will be before the summary is
// known (`fixed`), so the ladder (apps/worker/src/compaction/ladder.ts) can tell whether a summary
// of a given size fits the trigger. Pure arithmetic over the compaction job's snapshot.

import type { AgentConfig, CompactionConfig } from '../config.ts';
import type { WithParts } from '../schema/message.ts';
import { projectAfterCompaction, replayRequest } from './compaction.ts';
import { type CompactionRange, unansweredRequest } from './compaction-range.ts';
import { turnInProgress } from './control.ts';
import type { ContextBudget } from './overflow.ts';
import { CONTINUE_TEXT } from './placeholders.ts';
import { defaultTailBudget, selectTail } from './tail.ts';
import { countCapped, messageTokens, type Tokenizer } from './tokens.ts';

export interface CompactionPlan {
  /** What the summary replaces, minus a request that is replayed verbatim afterwards. */
  head: WithParts[];
  tail: WithParts[];
  tailStartId: string | undefined;
  /** The user's request to append again after the summary (overflow of the request itself). */
  replay: WithParts | undefined;
  /** Text appended after the summary: the replayed request, the continue message, or nothing. */
  followUp: string | undefined;
  /** Provider-scale size of the next prompt without the summary. */
  fixed: number;
}

export interface Plans {
  withTail: CompactionPlan | undefined;
  noTail: CompactionPlan;
  /** Provider tokens per tiktoken token (the session's learned ratio, else the family prior), with its margin. */
  ratio: number;
  trigger: number;
  /** A turn was being worked on when the compaction was requested: the loop must carry it on. */
  turnWasRunning: boolean;
  /** Provider-scale size of the next prompt with a summary of `summaryTokens` (tiktoken). */
  project(plan: CompactionPlan, summaryTokens: number): number;
}

export interface PlanInput {
  agent: Pick<AgentConfig, 'resendsReasoning'> & {
    compaction: Pick<CompactionConfig, 'tailTurns' | 'preserveRecentTokens'>;
  };
  budget: Pick<ContextBudget, 'usable' | 'trigger'>;
  /** tiktoken count of the system blocks and tool definitions (RequestShape.overheadTokens). */
  overheadTokens: number;
  /** The session's learned ratio (carried across compactions), else the family prior, and its margin. */
  ratio: { ratio: number; margin: number };
}

/** The two compaction shapes of a range (with tail, without), sized for the ladder. */
export function planCompaction(input: PlanInput, range: CompactionRange, tokenizer: Tokenizer): Plans {
  const { agent, budget } = input;
  const c = agent.compaction;
  // With its margin: every size the ladder checks is a bound, so each request it sends fits the window.
  const ratio = input.ratio.ratio * (1 + input.ratio.margin);
  const resendsReasoning = agent.resendsReasoning;
  let pendingTokens = 0;
  for (const m of range.pending) pendingTokens += messageTokens(m, resendsReasoning);
  const request = range.part.overflow ? unansweredRequest(range.frozen) : undefined;
  // A background compaction, and a manual one between turns, append nothing: the session stays
  // idle. An automatic one, and a manual one requested mid-turn, hand the turn back to the loop
  // with the continue message (or the replayed request).
  const turnWasRunning = turnInProgress(range.frozen);
  const appends = range.part.auto ? range.part.background !== true : turnWasRunning;

  const project = (plan: Pick<CompactionPlan, 'tail' | 'followUp'>, summaryTokens: number) =>
    projectAfterCompaction({
      systemTokens: input.overheadTokens,
      summaryTokens,
      tail: plan.tail,
      pending: pendingTokens + (plan.followUp ? countCapped(tokenizer, plan.followUp) : 0),
      ratio,
      resendsReasoning,
    });

  const make = (head: WithParts[], tail: WithParts[], tailStartId: string | undefined): CompactionPlan => {
    // A request the kept tail shows verbatim is not replayed: the model must read it once.
    const replay = request && !tail.includes(request) ? request : undefined;
    const followUp = appends ? (replay ? replayRequest(replay) : CONTINUE_TEXT) : undefined;
    const plan = {
      head: replay ? head.filter((m) => m !== replay) : head,
      tail,
      tailStartId,
      replay,
      followUp,
      fixed: 0,
    };
    plan.fixed = project(plan, 0);
    return plan;
  };

  const split = selectTail(range.frozen, {
    tailTurns: c.tailTurns,
    budget: c.preserveRecentTokens ?? defaultTailBudget(budget.usable),
  });
  return {
    withTail: split.tail.length > 0 ? make(split.head, split.tail, split.tailStartId) : undefined,
    noTail: make(range.frozen, [], undefined),
    ratio,
    trigger: budget.trigger,
    turnWasRunning,
    project,
  };
}

/**
 * `text` cut to at most `maxTokens`, keeping its beginning (range, requests) and its end (the
 * last request): the structural summary must fit even a tiny window.
 */
export function clipToTokens(text: string, maxTokens: number, tokenizer: Tokenizer): string {
  const total = countCapped(tokenizer, text);
  if (total <= maxTokens) return text;
  let chars = Math.floor((text.length * maxTokens) / total);
  for (let i = 0; i < 8 && chars > 0; i++) {
    const head = Math.floor(chars * 0.4);
    const clipped = `${text.slice(0, head)}\n…\n${text.slice(text.length - (chars - head))}`;
    if (countCapped(tokenizer, clipped) <= maxTokens) return clipped;
    chars = Math.floor(chars * 0.8);
  }
  return text.slice(0, Math.max(0, maxTokens));
}

/** The structural summary always gets at least this much room (tiktoken), even when nothing fits. */
export const MIN_STRUCTURAL_TOKENS = 200;

export type LlmRung = 'summary' | 'summary-no-tail';

/**
 * The LLM rungs of the ladder, in order: the summary with the tail, then without it. A plan whose
 * fixed part alone reaches the trigger leaves no room for any summary and is dropped before paying
 * for one (without a tail plan, the no-tail summary is the first rung and is called `summary`).
 */
export function llmRungs(plans: Pick<Plans, 'withTail' | 'noTail' | 'trigger'>): Array<{
  plan: CompactionPlan;
  rung: LlmRung;
}> {
  const { withTail, noTail, trigger } = plans;
  const rungs: Array<{ plan: CompactionPlan; rung: LlmRung }> = [];
  if (withTail && withTail.fixed < trigger) rungs.push({ plan: withTail, rung: 'summary' });
  if (noTail.fixed < trigger) rungs.push({ plan: noTail, rung: withTail ? 'summary-no-tail' : 'summary' });
  return rungs;
}

/**
 * The structural rung's plan and its size cap (tiktoken): the verbatim tail is kept when the
 * structural text still fits beside it with at least MIN_STRUCTURAL_TOKENS; otherwise everything
 * is summarised, in the room left or MIN_STRUCTURAL_TOKENS, whichever is larger.
 */
export function structuralPlan(plans: Pick<Plans, 'withTail' | 'noTail' | 'trigger' | 'ratio'>): {
  plan: CompactionPlan;
  maxTokens: number;
} {
  const { withTail, noTail, trigger, ratio } = plans;
  const room = (plan: CompactionPlan) => Math.floor((trigger - 1 - plan.fixed) / ratio);
  if (withTail && room(withTail) >= MIN_STRUCTURAL_TOKENS)
    return { plan: withTail, maxTokens: room(withTail) };
  return { plan: noTail, maxTokens: Math.max(room(noTail), MIN_STRUCTURAL_TOKENS) };
}
