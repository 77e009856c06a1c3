// Second line of defence (CONTEXT.md §3.2): choose old tool outputs to clear, without an LLM.
// Only plans: the prune job sets `time.compacted` on the returned parts (the outputs stay stored)
// and the model then sees `[Old tool result content cleared]`.

import { PRUNE_MINIMUM, PRUNE_PROTECT, PRUNE_PROTECTED_TOOLS } from '../config.ts';
import type { WithParts } from '../schema/message.ts';
import { storedOutputTokens } from './tokens.ts';

export interface PruneOptions {
  /** Tools whose outputs are never cleared (`skill`: instructions the model keeps following). */
  protectedTools?: readonly string[];
  /** Clear nothing unless the candidates add up to more than this: a prune must be worth a cache miss. */
  minimum?: number;
  /** The newest outputs up to this many tokens stay. */
  protect?: number;
}

export interface PrunePlan {
  partIds: string[];
  /** Output tokens the plan clears. */
  tokens: number;
}

/**
 * Walk `messages` (model-view order: filterCompacted output) newest → oldest: skip the two newest
 * user turns, stop at a summary message or at an output already cleared (everything older was
 * handled by an earlier prune), skip protected tools, and sum completed outputs; once the sum
 * passes `protect`, every further output is a candidate. Returns the candidates only if they add up
 * to more than `minimum`.
 */
export function planPrune(messages: WithParts[], opts: PruneOptions = {}): PrunePlan {
  const protectedTools = opts.protectedTools ?? PRUNE_PROTECTED_TOOLS;
  const minimum = opts.minimum ?? PRUNE_MINIMUM;
  const protect = opts.protect ?? PRUNE_PROTECT;
  const partIds: string[] = [];
  let total = 0;
  let candidates = 0;
  let turns = 0;
  walk: for (let i = messages.length - 1; i >= 0; i--) {
    const msg = messages[i]!;
    if (msg.info.role === 'user') turns++;
    if (turns < 2) continue;
    if (msg.info.role === 'assistant' && msg.info.summary) break;
    for (let j = msg.parts.length - 1; j >= 0; j--) {
      const part = msg.parts[j]!;
      if (part.type !== 'tool' || part.state.status !== 'completed') continue;
      if (protectedTools.includes(part.tool)) continue;
      if (part.state.time.compacted !== undefined) break walk;
      const tokens = storedOutputTokens(part);
      total += tokens;
      if (total > protect) {
        candidates += tokens;
        partIds.push(part.id);
      }
    }
  }
  return candidates > minimum ? { partIds, tokens: candidates } : { partIds: [], tokens: 0 };
}
