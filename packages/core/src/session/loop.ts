// The whole loop policy (docs/context.md §6) as pure functions: from the filtered log and a few
// numbers, what the step job does next (decide), and what it does with the model call's outcome
// (afterCall). Every decision is re-derived from durable state, so a retried step after a crash
// decides the same thing again; the step job only performs the action.

import type { AgentConfig, RuntimeFlags } from '../config.ts';
import { type ErrorData, errorData } from '../errors.ts';
import type { WithParts } from '../schema/message.ts';
import { type DeferredCall, deferredCalls } from './control.ts';
import { type LoopFacts, loopFacts, turnAbortedOf } from './loop-facts.ts';
import { compactionVerdict, grewSinceCompaction } from './loop-guard.ts';
import { contextBudget, exceedsWindow, isOverflow } from './overflow.ts';
import { budgetExceeded, type ProviderRetry, providerRetry, type StepBudgets } from './step-budget.ts';
import { pendingCompaction } from './turn.ts';

export type LoopAction =
  /** `aborted`: the newest reply, newer than the newest user message, was ended by POST …/abort. */
  | { type: 'exit'; reason: 'finished' | 'no-user-message' | 'aborted' }
  /**
   * Deferred tool calls (a subagent's task, client tools) have no result yet: end the step without
   * calling the model; the session waits (status `waiting`) until they are answered.
   */
  | { type: 'wait'; calls: DeferredCall[] }
  /** The newest compaction message with no completed summary: run its job before anything else. */
  | { type: 'run-compaction'; messageId: string; partId: string }
  /**
   * The estimate overflows, or (`rejected`) the provider refused the request: compact even if the
   * estimate fits. `overflow`: the unanswered newest message is the user's, replayed after the
   * summary instead of "continue". Decided by compactionVerdict (loop-guard.ts).
   */
  | { type: 'create-compaction'; overflow: boolean; iteration: number; streak: number; rejected?: true }
  | { type: 'fail'; error: ErrorData }
  /** Call the model once; on `lastStep` tools are withheld and maxStepsWrapUp() is appended. */
  | { type: 'call'; parentId: string; lastStep: boolean };

export interface DecideInput {
  /** filterCompacted output. */
  messages: WithParts[];
  agent: Pick<AgentConfig, 'limits' | 'compaction' | 'maxSteps'>;
  flags: RuntimeFlags;
  /** Model calls already made in the current user turn; stepsThisTurn(messages) when absent. */
  stepsThisTurn?: number | undefined;
  /**
   * loopFacts(messages), when the caller keeps them up to date (the worker's session cache extends
   * them as messages are appended): decide() then reads no message but the newest ones.
   */
  facts?: LoopFacts | undefined;
  /**
   * The fault budgets (step-budget.ts), checked before anything else: a turn that spent one fails
   * whatever else the log says. Absent: not checked.
   */
  budgets?: StepBudgets | undefined;
  /** estimateNextPrompt() for the call this step would make. */
  estimate: number;
  /** The session's last compaction result (its `tokensAfter`), for the no-loop growth guard. */
  lastCompactionTokensAfter?: number | undefined;
  /**
   * Tokens of what no compaction can shrink (system prompt and tool definitions), on the
   * estimate's scale. When they alone reach the trigger the turn ends with ContextOverflowError
   * instead of compacting in vain.
   */
  overhead?: number | undefined;
}

/** A reply the loop is done with: closed, not asking for tools, holding no tool calls. */
function isDone(msg: WithParts): boolean {
  if (msg.info.role !== 'assistant') return false;
  const { finish } = msg.info;
  // `interrupted`: a dead worker's step closed by its successor; the loop carries on.
  if (finish === undefined || finish === 'tool-calls' || finish === 'interrupted') return false;
  // A reply holding tool calls is never the final answer, whatever its finish says: some servers
  // send `stop` with tool calls, and the model has not seen the results yet.
  return !msg.parts.some((p) => p.type === 'tool');
}

/** What the step does next, from the filtered log and a few numbers (docs/context.md §6). */
export function decide(input: DecideInput): LoopAction {
  const { messages, agent, flags, estimate } = input;
  const spent = input.budgets && budgetExceeded(messages, input.budgets);
  if (spent) return { type: 'fail', error: spent };
  const facts = input.facts ?? loopFacts(messages);
  const { lastUser, lastAssistant } = facts;
  if (!lastUser) return { type: 'exit', reason: 'no-user-message' };
  if (lastAssistant && lastAssistant.info.seq > lastUser.info.seq && isDone(lastAssistant)) {
    return { type: 'exit', reason: 'finished' };
  }
  // An aborted reply ends the turn; a user message typed after it starts a new one.
  if (turnAbortedOf(facts)) return { type: 'exit', reason: 'aborted' };
  // Never call the model, nor compact, while a call it made still waits for its result.
  const waiting = deferredCalls(facts.waiting);
  if (waiting.length > 0) return { type: 'wait', calls: waiting };

  // Subtasks would run first; Loopline has none yet.
  const pending = pendingCompaction(facts.compactions);
  if (pending) return { type: 'run-compaction', messageId: pending.message.info.id, partId: pending.part.id };

  const { compaction, limits } = agent;
  if (isOverflow({ count: estimate, limits, compaction, flags })) {
    const trigger = contextBudget(limits!, compaction).trigger;
    if (input.overhead !== undefined && input.overhead >= trigger) {
      return {
        type: 'fail',
        error: errorData(
          'ContextOverflowError',
          `the system prompt and tool definitions alone (${input.overhead} tokens) reach the compaction trigger (${trigger}); no compaction can make room`,
          { overhead: input.overhead, trigger },
        ),
      };
    }
    // No loop: a compaction that left the context near the trigger must not fire again at once,
    // unless the call cannot fit at all (the loop guard still bounds that case).
    const grew = grewSinceCompaction(
      estimate,
      input.lastCompactionTokensAfter,
      compaction.growthMargin,
      trigger,
    );
    if (grew || exceedsWindow(estimate, limits)) return compactionVerdict({ messages, compaction, flags });
  }
  // With automatic compaction off, a prompt that cannot fit is an error now, not after paying for
  // a call the provider rejects.
  if (exceedsWindow(estimate, limits)) {
    return { type: 'fail', error: errorData('ContextOverflowError', undefined, { estimate }) };
  }
  const steps = input.stepsThisTurn ?? facts.steps;
  if (steps >= agent.maxSteps) {
    return { type: 'fail', error: errorData('MaxStepsReachedError', undefined, { steps }) };
  }
  return { type: 'call', parentId: lastUser.info.id, lastStep: steps + 1 >= agent.maxSteps };
}

/** How a model call ended, as the step job saw it (apps/worker/src/step/call-model.ts). */
export type CallResult =
  | { type: 'continue' }
  /** The provider failed retryably; `delayMs` is its Retry-After (0 without one). */
  | { type: 'retry'; delayMs: number; cause: string }
  /** The provider rejected the request as too long. */
  | { type: 'overflow' }
  | { type: 'failed'; error: ErrorData }
  /** The stream was cut: the job was cancelled, or its lease was lost. */
  | { type: 'lost' };

export type AfterCallAction =
  /** Nothing more for this runner: a lost lease belongs to the next runner. */
  | { type: 'stop' }
  /** POST …/abort cancelled the call: end the turn now, keeping what was streamed. */
  | { type: 'end-aborted-turn' }
  /** Enqueue the next step now. */
  | { type: 'next' }
  /** Say why the session does not move, then enqueue the next step after `delayMs`. */
  | ({ type: 'retry' } & ProviderRetry)
  | Extract<LoopAction, { type: 'create-compaction' | 'fail' }>;

export interface AfterCallInput {
  result: CallResult;
  /** The call was cancelled by POST …/abort (rather than by a lost lease). */
  userAborted: boolean;
  /** The view the call was built from. */
  messages: WithParts[];
  agent: Pick<AgentConfig, 'compaction'>;
  flags: RuntimeFlags;
  maxProviderRetries: number;
}

/**
 * What the step does once its model call ended. A provider rejection (docs/context.md §2) goes
 * through decide()'s loop guard: the same `create-compaction` (marked `rejected`) or `fail`.
 */
export function afterCall(input: AfterCallInput): AfterCallAction {
  const { result } = input;
  switch (result.type) {
    case 'lost':
      return input.userAborted ? { type: 'end-aborted-turn' } : { type: 'stop' };
    case 'continue':
      return { type: 'next' };
    case 'retry':
      return { type: 'retry', ...providerRetry(input.messages, result, input.maxProviderRetries) };
    case 'failed':
      return { type: 'fail', error: result.error };
    case 'overflow': {
      const verdict = compactionVerdict({
        messages: input.messages,
        compaction: input.agent.compaction,
        flags: input.flags,
        rejected: true,
      });
      return verdict.type === 'fail' ? verdict : { ...verdict, rejected: true };
    }
  }
}
