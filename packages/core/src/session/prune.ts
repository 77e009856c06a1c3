// Second line of defence (docs/context.md, "Prune"): choose old tool outputs to clear, without
// an LLM. Only plans: the prune job sets `time.compacted` on the returned parts (the outputs stay
// stored) and the model then sees `[Old tool result content cleared]`. The call and its (cleared)
// result stay together, so tool pairing is untouched.
//
// Protection counts assistant messages (steps), not user turns: a long single-turn task is one
// turn, and protecting turns would shield all of it. The token thresholds scale with the window:
// upstream's 40,000 / 20,000 exceed the whole of a 16k or 32k window.

import type { CompactionConfig } from '../config.ts';
import {
  PRUNE_MINIMUM,
  PRUNE_MINIMUM_SHARE,
  PRUNE_PROTECT,
  PRUNE_PROTECT_SHARE,
  PRUNE_PROTECT_STEPS,
  PRUNE_PROTECTED_TOOLS,
} from '../config.ts';
import type { WithParts } from '../schema/message.ts';
import { storedOutputTokens } from './tokens.ts';

export interface PruneOptions {
  /** Tools whose outputs are never cleared (`skill`: instructions the model keeps following). */
  protectedTools?: readonly string[];
  /** Clear nothing unless the candidates add up to more than this: a prune must be worth a cache miss. */
  minimum?: number;
  /** The newest outputs up to this many tokens stay. */
  protect?: number;
  /** The tool outputs of this many newest assistant messages stay, whatever their size. */
  protectSteps?: number;
}

/** Default thresholds for a usable window: min(40,000, 25 %) protected, min(20,000, 10 %) minimum. */
export function pruneDefaults(usable: number): { protect: number; minimum: number } {
  return {
    protect: Math.min(PRUNE_PROTECT, Math.floor(usable * PRUNE_PROTECT_SHARE)),
    minimum: Math.min(PRUNE_MINIMUM, Math.floor(usable * PRUNE_MINIMUM_SHARE)),
  };
}

/** The agent's prune options for its usable window (configured values win over the defaults). */
export function pruneOptions(
  compaction: Partial<
    Pick<CompactionConfig, 'protectedTools' | 'pruneProtect' | 'pruneMinimum' | 'pruneProtectSteps'>
  >,
  usable: number,
): Required<PruneOptions> {
  const defaults = pruneDefaults(usable);
  return {
    protectedTools: compaction.protectedTools ?? PRUNE_PROTECTED_TOOLS,
    protect: compaction.pruneProtect ?? defaults.protect,
    minimum: compaction.pruneMinimum ?? defaults.minimum,
    protectSteps: compaction.pruneProtectSteps ?? PRUNE_PROTECT_STEPS,
  };
}

export interface PrunePlan {
  partIds: string[];
  /** Output tokens the plan clears. */
  tokens: number;
}

/**
 * The outputs to clear, walking the model view newest → oldest past the `protectSteps` newest
 * replies and `protect` tokens of outputs; stops at a summary or a cleared output; none below `minimum`.
 */
export function planPrune(messages: WithParts[], opts: PruneOptions = {}): PrunePlan {
  const protectedTools = opts.protectedTools ?? PRUNE_PROTECTED_TOOLS;
  const minimum = opts.minimum ?? PRUNE_MINIMUM;
  const protect = opts.protect ?? PRUNE_PROTECT;
  const protectSteps = opts.protectSteps ?? PRUNE_PROTECT_STEPS;
  const partIds: string[] = [];
  let total = 0;
  let candidates = 0;
  let steps = 0;
  walk: for (let i = messages.length - 1; i >= 0; i--) {
    const msg = messages[i]!;
    if (msg.info.role !== 'assistant') continue;
    if (msg.info.summary) break;
    if (++steps <= protectSteps) continue;
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

/**
 * The prune minimum before a summary compaction: no more than `over` (tokens above the trigger),
 * since a prune that avoids a summary call and a whole-prompt cache miss is always worth it.
 */
export function minimumBeforeCompaction(minimum: number, over: number): number {
  return over > 0 ? Math.min(minimum, over) : minimum;
}
