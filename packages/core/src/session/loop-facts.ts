// What decide() and the step's session control read from the whole log, as a left fold over its
// messages, so a step extends the previous step's facts instead of walking the view again. Each
// fact is a newest-by-seq or the subset of messages its walking function reads (which answers the
// same on the subset), so facts extended message by message equal loopFacts of the whole list.

import type { WithParts } from '../schema/message.ts';
import { deferredOf, isAbortedReply } from './control.ts';
import { MESSAGE_FRAMING_TOKENS } from './estimate.ts';
import { compactionPartOf, isCompletedSummary } from './history.ts';
import { storedTokens } from './tokens.ts';
import { isTurnStart } from './turn.ts';

export interface LoopFacts {
  /** newestByRole(messages, 'user'). */
  readonly lastUser: WithParts | undefined;
  /** newestByRole(messages, 'assistant') (summaries included). */
  readonly lastAssistant: WithParts | undefined;
  /** The newest message the user typed (isTurnStart), by seq. */
  readonly turnStart: WithParts | undefined;
  /** The newest reply that is not a summary, by seq. */
  readonly lastReply: WithParts | undefined;
  /** The messages deferredCalls reads: closed replies holding a deferred call. */
  readonly waiting: readonly WithParts[];
  /** The messages pendingCompaction reads: compaction messages and completed summaries. */
  readonly compactions: readonly WithParts[];
  /** The messages unfinishedAssistants keeps: replies with no finish and no error. */
  readonly unfinished: readonly WithParts[];
  /**
   * The messages holding a file part: http(s) ones the worker fetches for a call, data: ones whose
   * bytes count against the request's attachment budget.
   */
  readonly files: readonly WithParts[];
  /** stepsThisTurn(messages). */
  readonly steps: number;
  /** requestTiktokens' sum over the messages, by kind (see requestTiktokensOf). */
  readonly tiktokens: TiktokenTally;
  /** Messages folded in. */
  readonly count: number;
}

const NONE: LoopFacts = {
  lastUser: undefined,
  lastAssistant: undefined,
  turnStart: undefined,
  lastReply: undefined,
  waiting: [],
  compactions: [],
  unfinished: [],
  files: [],
  steps: 0,
  tiktokens: { framed: 0, plain: 0, reasoning: 0 },
  count: 0,
};

/** Stored token counts of messages, apart so that any framing and reasoning choice can be applied. */
export interface TiktokenTally {
  /** Messages plus tool parts: one framing each. */
  framed: number;
  /** storedTokens of every part but reasoning. */
  plain: number;
  /** storedTokens of the reasoning parts. */
  reasoning: number;
}

/** The facts of `messages` (in their order: filterCompacted output or the log). */
export function loopFacts(messages: readonly WithParts[]): LoopFacts {
  return extendLoopFacts(NONE, messages);
}

/** The facts of the list `facts` was made from followed by `appended`; `facts` is not changed. */
export function extendLoopFacts(facts: LoopFacts, appended: readonly WithParts[]): LoopFacts {
  if (appended.length === 0) return facts;
  let { lastUser, lastAssistant, turnStart, lastReply, steps } = facts;
  const waiting: WithParts[] = [];
  const compactions: WithParts[] = [];
  const unfinished: WithParts[] = [];
  const files: WithParts[] = [];
  let { framed, plain, reasoning } = facts.tiktokens;
  for (const m of appended) {
    const info = m.info;
    framed++;
    let file = false;
    for (const p of m.parts) {
      if (p.type === 'reasoning') reasoning += storedTokens(p);
      else plain += storedTokens(p);
      if (p.type === 'tool') framed++;
      else if (p.type === 'file') file = true;
    }
    if (file) files.push(m);
    if (info.role === 'user') {
      if (!lastUser || info.seq > lastUser.info.seq) lastUser = m;
      if (isTurnStart(m) && (!turnStart || info.seq > turnStart.info.seq)) turnStart = m;
      // stepsThisTurn's turn start: a user message that is not synthetic.
      if (!info.synthetic) steps = 0;
    } else {
      if (!lastAssistant || info.seq > lastAssistant.info.seq) lastAssistant = m;
      if (!info.summary) {
        if (!lastReply || info.seq > lastReply.info.seq) lastReply = m;
        if (!spentByInfrastructure(m)) steps++;
      }
      if (info.finish === undefined && !info.error) unfinished.push(m);
      if (!info.summary && info.finish !== undefined && !info.error && holdsDeferred(m)) waiting.push(m);
    }
    if (isCompletedSummary(m) || compactionPartOf(m) !== undefined) compactions.push(m);
  }
  return {
    lastUser,
    lastAssistant,
    turnStart,
    lastReply,
    waiting: waiting.length > 0 ? [...facts.waiting, ...waiting] : facts.waiting,
    compactions: compactions.length > 0 ? [...facts.compactions, ...compactions] : facts.compactions,
    unfinished: unfinished.length > 0 ? [...facts.unfinished, ...unfinished] : facts.unfinished,
    files: files.length > 0 ? [...facts.files, ...files] : facts.files,
    steps,
    tiktokens: { framed, plain, reasoning },
    count: facts.count + appended.length,
  };
}

/** requestTiktokens(messages, overhead, resendsReasoning, framing) from the facts of `messages`. */
export function requestTiktokensOf(
  facts: LoopFacts,
  overhead: number,
  resendsReasoning: boolean,
  framing = MESSAGE_FRAMING_TOKENS,
): number {
  const t = facts.tiktokens;
  return overhead + 2 * framing + t.framed * framing + t.plain + (resendsReasoning ? t.reasoning : 0);
}

/** turnAborted(messages) from the facts of `messages`. */
export function turnAbortedOf(facts: LoopFacts): boolean {
  const from = (facts.turnStart ?? facts.lastUser)?.info.seq;
  if (from === undefined) return false;
  // The newest reply after `from` is the newest reply, when that one is after `from`.
  const reply = facts.lastReply;
  return reply !== undefined && reply.info.seq > from && isAbortedReply(reply);
}

/** step-budget.ts infrastructureFailure: a step that does not spend maxSteps. */
function spentByInfrastructure(m: WithParts): boolean {
  const error = m.info.role === 'assistant' ? m.info.error : undefined;
  return (
    error?.name === 'StepInterruptedError' || (error?.name === 'APIError' && error.data?.retryable === true)
  );
}

function holdsDeferred(m: WithParts): boolean {
  return m.parts.some((p) => p.type === 'tool' && deferredOf(p, m.info.id) !== undefined);
}
