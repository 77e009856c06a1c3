import type { ScenarioInput } from '@loopline/mock-llm';
import type { Client, Stack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// Shared pieces of the context-management e2e tests (context-*.test.ts): scripted mock rules, the
// `big` webhook tool, and direct reads of PostgreSQL for what the API does not show (compaction
// records, ledger rows, ignored parts).

/** The compaction agent's requests carry this system prompt (core COMPACTION_SYSTEM_PROMPT). */
export type RuleInput = NonNullable<ScenarioInput['rules']>[number];

export const SUMMARY_SYSTEM = 'You write the working state of a conversation';
/** core CONTINUE_TEXT, as the mock matches it. */
export const CONTINUE = 'Continue if you have next steps';

/**
 * The 8k-window tests drive the context with large `big` outputs (1,300–5,800 tokens each): they
 * set the ingest cap's window share to the whole window, since the default quarter would cut each
 * output to ~1,750 tokens (the cap itself is tested in context-limits.test.ts).
 */
export const WHOLE_OUTPUTS = { toolOutput: { windowShare: 1 } } as const;

/**
 * Tests of the summary compaction itself (ladder, background job, retries) switch prune off: with
 * prune on, the window-scaled defaults clear old outputs first and no summary would be needed.
 */
export const NO_PRUNE = { prune: false } as const;

export const summaryRule: RuleInput = { when: { system: SUMMARY_SYSTEM }, reply: { summary: true } };

/** A turn: `user` includes `trigger`; the model calls `big` once per tag, then answers `done`. */
export function bigTurn(trigger: string, tags: string[], lines: number, done: string): RuleInput[] {
  const rules: RuleInput[] = [];
  const call = (tag: string) => ({ toolCalls: [{ name: 'big', arguments: { lines, tag } }] });
  rules.push({ when: { lastUserIncludes: trigger, lastMessageRole: 'user' }, reply: call(tags[0]!) });
  for (let i = 0; i < tags.length; i++) {
    const next = tags[i + 1];
    rules.push({
      when: { toolResultIncludes: `[${tags[i]}]` },
      reply: next ? call(next) : { text: done },
    });
  }
  return rules;
}

/** Defines the `big` webhook tool (long outputs) on the stack's tool server. */
export async function defineBig(client: Client, stack: Stack): Promise<void> {
  await client.tool('big', {
    kind: 'webhook',
    description: 'Returns a long listing',
    inputSchema: {
      type: 'object',
      properties: { lines: { type: 'integer' }, tag: { type: 'string' } },
      required: ['lines'],
    },
    url: `${stack.tools.url}/big`,
  });
}

/** The session's compaction records, oldest first. */
export async function compactions(stack: Stack, sessionId: string) {
  return stack.deps.db
    .selectFrom('compactions')
    .selectAll()
    .where('session_id', '=', sessionId)
    .orderBy('started_at')
    .execute();
}

/** Every message of the log with its parts (reverted ones included). */
export async function log(client: Client, sessionId: string): Promise<any[]> {
  return (await client.history(sessionId)).messages;
}

/** Whether an API message is a summary. */
export const isSummary = (m: any) => m.info.role === 'assistant' && m.info.summary === true;
/** The compaction part of an API message, if any. */
export const markerOf = (m: any) => m.parts.find((p: any) => p.type === 'compaction');
/** The text of an API message's live (not ignored) text parts. */
export const liveText = (m: any) =>
  m.parts
    .filter((p: any) => p.type === 'text' && !p.ignored)
    .map((p: any) => p.text)
    .join('\n');

/** Tool parts whose output prune cleared. */
export function prunedParts(messages: any[]): any[] {
  return messages.flatMap((m) =>
    m.parts.filter((p: any) => p.type === 'tool' && p.state.status === 'completed' && p.state.time.compacted),
  );
}

/**
 * Asserts the no-loop rules over a log: per user turn at most `max` compaction markers, and no
 * two automatic compactions in a row (no model call in between).
 */
export function compactionShape(messages: any[]): { perTurn: number[]; backToBack: number } {
  const perTurn: number[] = [];
  let current = 0;
  let started = false;
  let backToBack = 0;
  let sinceCall = Number.POSITIVE_INFINITY;
  for (const m of messages) {
    if (m.info.role === 'user' && !m.info.synthetic) {
      if (started) perTurn.push(current);
      started = true;
      current = 0;
    }
    const part = markerOf(m);
    if (part) {
      current++;
      if (part.auto && sinceCall === 0) backToBack++;
      sinceCall = 0;
    }
    if (m.info.role === 'assistant' && !m.info.summary && m.info.finish && !m.info.error) sinceCall++;
  }
  perTurn.push(current);
  return { perTurn, backToBack };
}

/** until() with the arguments in the order these tests use. */
export function waitFor<T>(
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  return until(what, fn, timeoutMs, 50);
}
