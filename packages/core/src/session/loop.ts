// The whole loop policy (docs/context.md §6) as one pure function: from the filtered log and a few
// numbers, what the step job does next. Every decision is re-derived from durable state, so a
// retried step after a crash decides the same thing again.

import type { AgentConfig, RuntimeFlags } from '../config.ts';
import { type ErrorData, errorData } from '../errors.ts';
import type { WithParts } from '../schema/message.ts';
import { type DeferredCall, deferredCalls, turnAborted } from './control.ts';
import { compactionVerdict } from './loop-guard.ts';
import { contextBudget, exceedsWindow, isOverflow } from './overflow.ts';
import { newestByRole, pendingCompaction } from './turn.ts';

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
   * The pre-call estimate overflows: write a compaction message (its part gets `auto: true`,
   * `overflow`, `iteration` and `streak`) and end this step. `overflow` is true when the unanswered
   * newest message is the user's own request, which is replayed after the summary instead of
   * "continue". Decided by compactionVerdict (loop-guard.ts), as on a provider rejection.
   */
  | { type: 'create-compaction'; overflow: boolean; iteration: number; streak: number }
  | { type: 'fail'; error: ErrorData }
  /** Call the model once; on `lastStep` tools are withheld and maxStepsWrapUp() is appended. */
  | { type: 'call'; parentId: string; lastStep: boolean };

export interface DecideInput {
  /** filterCompacted output. */
  messages: WithParts[];
  agent: Pick<AgentConfig, 'limits' | 'compaction' | 'maxSteps'>;
  flags: RuntimeFlags;
  /** Model calls already made in the current user turn. */
  stepsThisTurn: number;
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

export function decide(input: DecideInput): LoopAction {
  const { messages, agent, flags, estimate } = input;
  const lastUser = newestByRole(messages, 'user');
  if (!lastUser) return { type: 'exit', reason: 'no-user-message' };
  const lastAssistant = newestByRole(messages, 'assistant');
  if (lastAssistant && lastAssistant.info.seq > lastUser.info.seq && isDone(lastAssistant)) {
    return { type: 'exit', reason: 'finished' };
  }
  // An aborted reply ends the turn; a user message typed after it starts a new one.
  if (turnAborted(messages)) return { type: 'exit', reason: 'aborted' };
  // Never call the model, nor compact, while a call it made still waits for its result.
  const waiting = deferredCalls(messages);
  if (waiting.length > 0) return { type: 'wait', calls: waiting };

  // Subtasks would run first; Loopline has none yet.
  const pending = pendingCompaction(messages);
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
    const after = input.lastCompactionTokensAfter;
    // No loop: a compaction that left the context near the trigger must not fire again at once,
    // unless the call cannot fit at all (the loop guard still bounds that case).
    const grew = after === undefined || estimate - after >= compaction.growthMargin * trigger;
    if (grew || exceedsWindow(estimate, limits)) return compactionVerdict({ messages, compaction, flags });
  }
  // With automatic compaction off, a prompt that cannot fit is an error now, not after paying for
  // a call the provider rejects.
  if (exceedsWindow(estimate, limits)) {
    return { type: 'fail', error: errorData('ContextOverflowError', undefined, { estimate }) };
  }
  if (input.stepsThisTurn >= agent.maxSteps) {
    return {
      type: 'fail',
      error: errorData('MaxStepsReachedError', undefined, { steps: input.stepsThisTurn }),
    };
  }
  return { type: 'call', parentId: lastUser.info.id, lastStep: input.stepsThisTurn + 1 >= agent.maxSteps };
}
