// Summary compaction (docs/context.md §5) as pure steps: the compaction request built from the head,
// the text appended afterwards, the projected size that decides whether a rung was enough, and
// the chunking used when the head itself is too large for one request. The job runs the ladder.

import { COMPACTION_TOOL_OUTPUT_CHARS, type ModelLimits, OUTPUT_TOKEN_MAX } from '../config.ts';
import type { WithParts } from '../schema/message.ts';
import type { Part } from '../schema/part.ts';
import { compactionPartOf, isCompletedSummary } from './history.ts';
import type { ModelMessage } from './model-message.ts';
import { attachedFileText, COMPACTION_QUESTION, compactionTruncationMarker } from './placeholders.ts';
import { buildMergePrompt, buildSummaryPrompt, type SummaryPromptInput } from './summary-prompt.ts';
import { toModelMessages } from './to-model-messages.ts';
import { estimateTokens, messageTokens, storedTokens, toolResultText } from './tokens.ts';

export interface CompactionInputOptions extends Omit<SummaryPromptInput, 'previousSummary'> {
  /** Characters kept of each tool result (default 2,000). */
  toolOutputCap?: number;
}

/** The text of a summary message. */
export function summaryText(msg: WithParts): string {
  return msg.parts
    .flatMap((p) => (p.type === 'text' && !p.ignored ? [p.text] : []))
    .join('\n')
    .trim();
}

/** The newest completed summary in `messages` (the anchor of the next summary). */
export function previousSummary(messages: WithParts[]): string | undefined {
  let best: WithParts | undefined;
  for (const m of messages) if (isCompletedSummary(m) && (!best || m.info.seq > best.info.seq)) best = m;
  return best ? summaryText(best) : undefined;
}

// Earlier boundaries are not re-summarised: their summary is passed as <previous-summary> instead.
function isMarker(msg: WithParts): boolean {
  return (msg.info.role === 'assistant' && msg.info.summary === true) || compactionPartOf(msg) !== undefined;
}

/**
 * The messages of a compaction request for `head` (selectTail's head): the head without earlier
 * compaction markers and summaries, media named instead of sent, tool results capped at 2,000
 * characters, then the summary prompt anchored on the newest earlier summary.
 */
export function buildCompactionInput(head: WithParts[], opts: CompactionInputOptions = {}): ModelMessage[] {
  const messages = toModelMessages(
    head.filter((m) => !isMarker(m)),
    { stripMedia: true, toolOutputCap: opts.toolOutputCap ?? COMPACTION_TOOL_OUTPUT_CHARS },
  );
  const prompt = buildSummaryPrompt({ ...opts, previousSummary: previousSummary(head) });
  messages.push({ role: 'user', content: [{ type: 'text', text: prompt }] });
  return messages;
}

/** The merge request of a chunked compaction (one user message). */
export function buildMergeInput(
  partials: readonly string[],
  head: WithParts[],
  opts: Omit<SummaryPromptInput, 'previousSummary'> = {},
): ModelMessage[] {
  const text = buildMergePrompt(partials, { ...opts, previousSummary: previousSummary(head) });
  return [{ role: 'user', content: [{ type: 'text', text }] }];
}

/**
 * The text of the message replayed after an overflow compaction: the user's request as it was,
 * with attachments named (`[Attached <mime>: <name>]`) so the replay cannot overflow on media.
 */
export function replayRequest(user: WithParts): string {
  const out: string[] = [];
  for (const p of user.parts) {
    if (p.type === 'text' && !p.ignored && p.text.trim() !== '') out.push(p.text);
    else if (p.type === 'file') out.push(attachedFileText(p.mime, p.filename));
  }
  return out.join('\n\n');
}

export interface ProjectionInput {
  /** tiktoken count of system blocks and tool definitions. */
  systemTokens: number;
  /** tiktoken count of the new summary. */
  summaryTokens: number;
  /** The verbatim tail kept after the summary. */
  tail: WithParts[];
  /** What follows: messages after the compaction message, or their token count (continue/replay text included). */
  pending: WithParts[] | number;
  /** Provider tokens per tiktoken token (the session's ratio); default 1. */
  ratio?: number;
  resendsReasoning?: boolean;
}

/**
 * Provider-scale size of the next prompt after a compaction. The job compares it with the trigger:
 * at or above it, the rung did not make enough room and the next rung runs.
 */
export function projectAfterCompaction(input: ProjectionInput): number {
  const reasoning = input.resendsReasoning ?? false;
  let sum = input.systemTokens + input.summaryTokens + estimateTokens(COMPACTION_QUESTION);
  for (const m of input.tail) sum += messageTokens(m, reasoning);
  if (typeof input.pending === 'number') sum += input.pending;
  else for (const m of input.pending) sum += messageTokens(m, reasoning);
  return Math.ceil(sum * (input.ratio ?? 1));
}

// Tool results are capped in the compaction input, so a stored count of a huge output would make
// a chunk look far larger than what is sent.
function compactionPartTokens(part: Part, cap: number): number {
  if (part.type === 'reasoning') return 0;
  if (part.type === 'file') return estimateTokens(attachedFileText(part.mime, part.filename));
  const stored = storedTokens(part);
  if (part.type !== 'tool') return stored;
  const input = estimateTokens(JSON.stringify(part.state.input) ?? '') + estimateTokens(part.tool);
  const result = toolResultText(part);
  const capped =
    result.length > cap
      ? estimateTokens(result.slice(0, cap)) + estimateTokens(compactionTruncationMarker(result.length - cap))
      : estimateTokens(result);
  return Math.min(stored, input + capped);
}

/** Tokens a message adds to a compaction request. */
export function compactionInputTokens(msg: WithParts, cap: number = COMPACTION_TOOL_OUTPUT_CHARS): number {
  if (isMarker(msg)) return 0;
  let sum = 0;
  for (const p of msg.parts) sum += compactionPartTokens(p, cap);
  return sum;
}

/**
 * The head in chunks of at most `maxTokensPerChunk` for map then merge, cut at message boundaries
 * (a larger message is its own chunk); earlier boundaries are left out.
 */
export function chunkForSummary(head: WithParts[], maxTokensPerChunk: number): WithParts[][] {
  const chunks: WithParts[][] = [];
  let current: WithParts[] = [];
  let used = 0;
  for (const msg of head) {
    if (isMarker(msg)) continue;
    const tokens = compactionInputTokens(msg);
    if (current.length > 0 && used + tokens > maxTokensPerChunk) {
      chunks.push(current);
      current = [];
      used = 0;
    }
    current.push(msg);
    used += tokens;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

// The chunked LLM rung's policy (docs/context.md §5.6): a head too large for one summary request
// is summarised in chunks (map), then merged; a chunk the provider still rejects halves the chunk
// size, a few times at most. The worker performs the requests (compaction/head-summary.ts).

/** Halvings of the chunk size tried before giving up on chunking. */
export const CHUNK_ROUNDS = 3;
/** More partial summaries than this are not worth their cost: the structural rung takes over. */
export const MAX_CHUNKS = 12;
/** Below this chunk size a summary says little more than the structural one. */
export const MIN_CHUNK_TOKENS = 256;

/** The largest request a summary model takes: its input limit, else context minus the requested output. */
export function summaryWindow(limits: ModelLimits): number {
  const maxOutput = Math.min(limits.output, OUTPUT_TOKEN_MAX) || OUTPUT_TOKEN_MAX;
  return limits.input || Math.max(0, limits.context - maxOutput);
}

/** The first round's chunk size (tiktoken): 90 % of the window at the provider ratio, less the fixed prompt. */
export function firstChunkBudget(limits: ModelLimits, ratio: number, fixedTokens: number): number {
  return Math.floor((summaryWindow(limits) / ratio) * 0.9) - fixedTokens;
}

/** One round of chunking: its chunks at its size, or why chunking gives up now. */
export type ChunkRound = { chunks: WithParts[][]; budget: number } | { gaveUp: string };

/**
 * Round `round` (0-based) of the chunked rung, its size halved from `firstBudget` each round;
 * undefined when no round is left (the rounds are spent, the size is too small or the head empty).
 */
export function chunkRound(head: WithParts[], round: number, firstBudget: number): ChunkRound | undefined {
  const budget = Math.floor(firstBudget / 2 ** round);
  if (round >= CHUNK_ROUNDS || budget < MIN_CHUNK_TOKENS) return undefined;
  const chunks = chunkForSummary(head, budget);
  if (chunks.length === 0) return undefined;
  if (chunks.length > MAX_CHUNKS) return { gaveUp: `the head needs more than ${MAX_CHUNKS} chunks` };
  // A single message larger than a chunk does not shrink by halving.
  if (chunks.some((chunk) => chunk.reduce((s, m) => s + compactionInputTokens(m), 0) > budget)) {
    return { gaveUp: 'one message alone is larger than the summary model window' };
  }
  return { chunks, budget };
}
