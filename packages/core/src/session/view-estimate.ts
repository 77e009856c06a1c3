// The estimate of the next prompt over a model view (docs/context.md §2 point 1), and the facts a
// caller keeps so that a step does not walk the whole view to make it: the anchor, and the older
// messages whose pruned outputs shrink the next prompt. The worker's session cache extends these
// facts as messages are appended; everything here is the rule it extends them by.

import type { WithParts } from '../schema/message.ts';
import {
  type Anchor,
  estimatePrompt,
  findAnchor,
  MESSAGE_FRAMING_TOKENS,
  type PromptEstimate,
} from './estimate.ts';

/** What an anchored estimate reads of a view besides its newest messages. */
export interface AnchorFacts {
  /** findAnchor(view). */
  anchor: Anchor | undefined;
  /** The messages of the view holding a pruned tool output, in view order. */
  pruned: WithParts[];
}

/** A message holding a completed tool output that prune has cleared. */
export function hasPrunedOutput(m: WithParts): boolean {
  return m.parts.some(
    (p) => p.type === 'tool' && p.state.status === 'completed' && p.state.time.compacted !== undefined,
  );
}

/** The facts of a whole view. */
export function anchorFactsOf(view: readonly WithParts[]): AnchorFacts {
  return { anchor: findAnchor(view as WithParts[]), pruned: view.filter(hasPrunedOutput) };
}

/**
 * The facts of `view` followed by `appended`, for messages appended to the log that are no
 * boundary marker (no compaction request, no summary: the view then just grows by them, and their
 * seqs are above every held one), so the newest report among them, if any, is the anchor.
 */
export function extendAnchorFacts(facts: AnchorFacts, appended: readonly WithParts[]): AnchorFacts {
  if (appended.length === 0) return facts;
  return {
    anchor: findAnchor(appended as WithParts[]) ?? facts.anchor,
    pruned: [...facts.pruned, ...appended.filter(hasPrunedOutput)],
  };
}

export interface ViewEstimateInput {
  /** The model view the next request is built from (filterCompacted, or queueView in queue mode). */
  view: WithParts[];
  /** anchorFactsOf(view), kept by the caller; absent: the view is walked. */
  facts?: AnchorFacts | undefined;
  /** The session's ratio and its margin (ratioState). */
  ratio: number;
  margin: number;
  resendsReasoning: boolean;
  /** The agent's model ref. */
  model: string;
  /** tiktoken count of the system blocks and tool definitions (read only without an anchor). */
  overhead: number;
}

/**
 * The next prompt's estimate and bound over a view. With the facts, an anchored estimate reads
 * only the messages from the anchor on and the older ones holding a pruned output: the same
 * estimate as over the whole view (every other older message adds nothing to it), without the walk.
 */
export function estimateView(input: ViewEstimateInput): PromptEstimate {
  const { view, facts } = input;
  const anchor = facts ? facts.anchor : findAnchor(view);
  return estimatePrompt({
    anchor,
    messages: facts && anchor ? anchoredMessages(view, { anchor, pruned: facts.pruned }) : view,
    ratio: input.ratio,
    margin: input.margin,
    framing: MESSAGE_FRAMING_TOKENS,
    resendsReasoning: input.resendsReasoning,
    model: input.model,
    overhead: input.overhead,
  });
}

/** The older messages holding a pruned output, then every message from the anchor on. */
function anchoredMessages(
  view: readonly WithParts[],
  facts: { anchor: Anchor; pruned: WithParts[] },
): WithParts[] {
  const from = facts.anchor.messageSeq;
  // The anchor is newer than every summary of the view, so everything from it on is the view's
  // seq-ordered end.
  let start = view.length;
  while (start > 0 && view[start - 1]!.info.seq >= from) start--;
  const older = facts.pruned.filter((m) => m.info.seq < from);
  return older.length > 0 ? [...older, ...view.slice(start)] : view.slice(start);
}
