// Tool-pair integrity, checked on the exact messages a model call sends: every tool call has
// exactly one result, in a tool message right after the assistant message that made it, in the
// call order, and no result answers a call that is not there. Providers answer 400 to a request
// that breaks this, and a session that sends one stays broken, so whatever prune, compaction,
// tail selection, revert, abort or a dead worker did, the request is checked before it leaves and
// repaired deterministically if needed: a missing result becomes the interrupted placeholder, an
// orphan or duplicate is dropped. toModelMessages never produces a broken pair; the check is the
// last line that makes sure of it.

import type { WithParts } from '../schema/message.ts';
import type {
  AssistantModelMessage,
  ModelMessage,
  ModelToolCallPart,
  ModelToolResultPart,
  ToolModelMessage,
} from './model-message.ts';
import { INTERRUPTED_TOOL_OUTPUT } from './placeholders.ts';
import { type ToModelOptions, toModelMessages } from './to-model-messages.ts';

export interface PairProblem {
  kind:
    | 'missing-result' // a call without a result right after it (synthesised as interrupted)
    | 'orphan-result' // a result with no call right before it (dropped)
    | 'duplicate-call' // a call id seen earlier in the request (the later call is dropped)
    | 'duplicate-result' // a second result for one call (dropped)
    | 'out-of-order'; // results not in call order (reordered)
  toolCallId: string;
  /** Index of the message in the request where it was found. */
  index: number;
}

function callsOf(msg: ModelMessage): ModelToolCallPart[] {
  if (msg.role !== 'assistant') return [];
  return msg.content.filter((p): p is ModelToolCallPart => p.type === 'tool-call');
}

/** The problems of `messages` (empty when every pair is intact). */
export function checkToolPairs(messages: ModelMessage[]): PairProblem[] {
  return repairToolPairs(messages).problems;
}

/**
 * `messages` with every pair intact, and what had to change. Deterministic: the same input gives
 * the same output; an intact request comes back unchanged (the same array).
 */
export function repairToolPairs(messages: ModelMessage[]): {
  messages: ModelMessage[];
  problems: PairProblem[];
} {
  return repairPairsFrom(messages, new Set(), 0);
}

/**
 * repairToolPairs of a request's continuation: `seenCalls` holds the call ids of the messages
 * before `messages` (and gets theirs), `offset` how many messages came before (for the problems'
 * index). The same fold, resumable where no tool message follows the previous messages' calls.
 */
export function repairPairsFrom(
  messages: ModelMessage[],
  seenCalls: Set<string>,
  offset: number,
): { messages: ModelMessage[]; problems: PairProblem[] } {
  const problems: PairProblem[] = [];
  const out: ModelMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const msg = messages[i]!;
    if (msg.role === 'tool') {
      // Results the branch below did not consume: nothing calls them.
      for (const r of msg.content)
        problems.push({ kind: 'orphan-result', toolCallId: r.toolCallId, index: offset + i });
      continue;
    }
    if (msg.role !== 'assistant') {
      out.push(msg);
      continue;
    }
    let calls = callsOf(msg);
    if (calls.length === 0) {
      out.push(msg);
      continue;
    }
    // A call id used twice in one request: keep the first, drop the later call with its result.
    const dropped = new Set<ModelToolCallPart>();
    for (const c of calls) {
      if (seenCalls.has(c.toolCallId)) {
        dropped.add(c);
        problems.push({ kind: 'duplicate-call', toolCallId: c.toolCallId, index: offset + i });
      } else seenCalls.add(c.toolCallId);
    }
    let assistant: AssistantModelMessage = msg;
    if (dropped.size > 0) {
      calls = calls.filter((c) => !dropped.has(c));
      assistant = {
        role: 'assistant',
        content: msg.content.filter((p) => !dropped.has(p as ModelToolCallPart)),
      };
    }
    // The results: every tool message right after it (toModelMessages writes one).
    const given: ModelToolResultPart[] = [];
    let j = i + 1;
    for (; j < messages.length && messages[j]!.role === 'tool'; j++)
      given.push(...(messages[j] as ToolModelMessage).content);
    const wanted = new Map(calls.map((c) => [c.toolCallId, c]));
    const byId = new Map<string, ModelToolResultPart>();
    const arrival: string[] = [];
    for (const r of given) {
      if (!wanted.has(r.toolCallId)) {
        const kind = byId.has(r.toolCallId) || dropped.size > 0 ? 'duplicate-result' : 'orphan-result';
        problems.push({ kind, toolCallId: r.toolCallId, index: offset + i + 1 });
      } else if (byId.has(r.toolCallId)) {
        problems.push({ kind: 'duplicate-result', toolCallId: r.toolCallId, index: offset + i + 1 });
      } else {
        byId.set(r.toolCallId, r);
        arrival.push(r.toolCallId);
      }
    }
    const inOrder = calls.map((c) => c.toolCallId).filter((id) => byId.has(id));
    if (inOrder.some((id, k) => arrival[k] !== id)) {
      problems.push({ kind: 'out-of-order', toolCallId: inOrder[0]!, index: offset + i + 1 });
    }
    const results: ModelToolResultPart[] = calls.map((c) => {
      const r = byId.get(c.toolCallId);
      if (r) return r;
      problems.push({ kind: 'missing-result', toolCallId: c.toolCallId, index: offset + i });
      return {
        type: 'tool-result',
        toolCallId: c.toolCallId,
        toolName: c.toolName,
        output: { type: 'error-text', value: INTERRUPTED_TOOL_OUTPUT },
      };
    });
    if (assistant.content.length > 0) out.push(assistant);
    if (results.length > 0) out.push({ role: 'tool', content: results });
    i = j - 1; // the tool messages were consumed
  }
  return problems.length === 0 ? { messages, problems } : { messages: out, problems };
}

/**
 * What a model call sends: toModelMessages of the view, with the pair invariant checked and, if a
 * pair is broken, repaired. `problems` is empty unless something upstream went wrong; the caller
 * logs it.
 */
export function toRequestMessages(
  view: WithParts[],
  opts: ToModelOptions = {},
): { messages: ModelMessage[]; problems: PairProblem[] } {
  return repairToolPairs(toModelMessages(view, opts));
}
