// Rule matching: picks the first scenario rule whose conditions all hold and whose `times`
// budget is not spent. Owns the per-server fire counters; never builds replies.

import { type Conversation, lastUserText, trailingToolResults } from './conversation.ts';
import type { Rule, Scenario, When } from './scenario.ts';

/** Whether a scenario rule's `when` matches this call. */
export function ruleMatches(when: When, conv: Conversation, callIndex: number): boolean {
  const lastUser = lastUserText(conv);
  const tools = trailingToolResults(conv);
  const last = conv.messages.at(-1);
  if (when.lastUserIncludes !== undefined && !lastUser.includes(when.lastUserIncludes)) return false;
  if (when.lastUserMatches !== undefined && !new RegExp(when.lastUserMatches).test(lastUser)) return false;
  if (when.lastMessageRole !== undefined && last?.role !== when.lastMessageRole) return false;
  if (when.lastToolName !== undefined && !tools.some((t) => t.toolName === when.lastToolName)) return false;
  if (when.system !== undefined && !conv.system.includes(when.system)) return false;
  if (
    when.toolResultIncludes !== undefined &&
    !tools.some((t) => t.text.includes(when.toolResultIncludes!))
  ) {
    return false;
  }
  if (when.callIndex !== undefined && callIndex !== when.callIndex) return false;
  if (when.model !== undefined && conv.model !== when.model) return false;
  return true;
}

export class RuleBook {
  private fired = new Map<number, number>();

  /** The first matching rule with budget left; consumes one firing. */
  pick(scenario: Scenario, conv: Conversation, callIndex: number): { rule: Rule; index: number } | undefined {
    for (const [index, rule] of scenario.rules.entries()) {
      const used = this.fired.get(index) ?? 0;
      if (rule.times !== undefined && used >= rule.times) continue;
      if (!ruleMatches(rule.when, conv, callIndex)) continue;
      this.fired.set(index, used + 1);
      return { rule, index };
    }
    return undefined;
  }

  /** How many times each rule fired, by index. */
  counts(): Record<number, number> {
    return Object.fromEntries(this.fired);
  }

  reset(): void {
    this.fired.clear();
  }
}
