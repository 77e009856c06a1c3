import { z } from 'zod';
import { ErrorData } from '../errors.ts';
import { Usage } from './usage.ts';

// Parts: the ordered content of a message. Rows are never deleted; a part only moves forward
// (a tool's state machine, a text part's final text, prune's `time.compacted` mark).
// Every part carries `tokens`, its tiktoken count computed once when written.

const PartBase = z.object({
  id: z.string(),
  sessionId: z.string(),
  messageId: z.string(),
  /** tiktoken count of what this part contributes to the model input, computed once at write time. */
  tokens: z.number().int().nonnegative().default(0),
});

export const TextPart = PartBase.extend({
  type: z.literal('text'),
  text: z.string(),
  /** Written by the system (continue message, replayed request), still sent to the model. */
  synthetic: z.boolean().optional(),
  /** Kept in the log, never sent to the model. */
  ignored: z.boolean().optional(),
});

export const ReasoningPart = PartBase.extend({
  type: z.literal('reasoning'),
  text: z.string(),
});

export const FilePart = PartBase.extend({
  type: z.literal('file'),
  mime: z.string(),
  filename: z.string().optional(),
  url: z.string(),
});

/** Marks a tool output that was cut at ingest; the full text is in `tool_outputs`. */
export const Truncation = z.object({
  outputId: z.string(),
  totalLines: z.number().int(),
  totalBytes: z.number().int(),
  direction: z.enum(['head', 'tail']),
});

export const ToolStatePending = z.object({
  status: z.literal('pending'),
  input: z.record(z.string(), z.unknown()),
  raw: z.string().optional(),
});
export const ToolStateRunning = z.object({
  status: z.literal('running'),
  input: z.record(z.string(), z.unknown()),
  title: z.string().optional(),
  /**
   * A call the step does not run to completion itself (session control): `awaiting: 'subagent'`
   * with `childSessionId` (the built-in task tool), or `awaiting: 'client'` with an optional
   * `deadline` (ms epoch) for a client tool. The session waits; the result arrives later.
   */
  metadata: z.record(z.string(), z.unknown()).optional(),
  time: z.object({ start: z.number() }),
});
export const ToolStateCompleted = z.object({
  status: z.literal('completed'),
  input: z.record(z.string(), z.unknown()),
  output: z.string(),
  title: z.string().default(''),
  metadata: z.record(z.string(), z.unknown()).default({}),
  truncated: Truncation.optional(),
  time: z.object({ start: z.number(), end: z.number(), compacted: z.number().optional() }),
});
export const ToolStateError = z.object({
  status: z.literal('error'),
  input: z.record(z.string(), z.unknown()),
  error: z.string(),
  /** Partial output of a tool that was interrupted; sent to the model instead of the error text. */
  output: z.string().optional(),
  interrupted: z.boolean().optional(),
  time: z.object({ start: z.number(), end: z.number() }),
});
export const ToolState = z.discriminatedUnion('status', [
  ToolStatePending,
  ToolStateRunning,
  ToolStateCompleted,
  ToolStateError,
]);
export type ToolState = z.infer<typeof ToolState>;

export const ToolPart = PartBase.extend({
  type: z.literal('tool'),
  callId: z.string(),
  tool: z.string(),
  state: ToolState,
  /**
   * tiktoken count of the result alone (output or error text), computed once when the result is
   * written. The step that made the call already paid for its input in the provider's usage, so
   * the next-prompt estimate adds only this for the anchor message (no re-tokenizing), and prune
   * sums it.
   */
  outputTokens: z.number().int().nonnegative().optional(),
});

export const StepStartPart = PartBase.extend({ type: z.literal('step-start') });

export const StepFinishPart = PartBase.extend({
  type: z.literal('step-finish'),
  reason: z.string(),
  usage: Usage,
});

export const CompactionPart = PartBase.extend({
  type: z.literal('compaction'),
  /** true when the loop created it, false for POST /compact. */
  auto: z.boolean(),
  /** true when a request was too large: the user request is replayed after the summary. */
  overflow: z.boolean().default(false),
  /** First message of the verbatim tail kept after the summary; set by the compaction job. */
  tailStartId: z.string().optional(),
  /** Extra instructions given to POST /compact. */
  instructions: z.string().optional(),
  /**
   * 1-based number of this compaction within its user turn, set when the loop creates it. The
   * optional per-turn cap (maxCompactionsPerTurn) still holds once a boundary has cut the turn's
   * first message out of the model view.
   */
  iteration: z.number().int().positive().optional(),
  /**
   * 1-based number of this compaction in its run of compactions with no completed model step in
   * between (the loop guard's count, bounded by maxIterations), set when the loop creates it.
   */
  streak: z.number().int().positive().optional(),
  /**
   * Written by the idle-session background job (above the background threshold, docs/context.md §2): like `auto`, but
   * nothing is appended afterwards and the loop is not restarted.
   */
  background: z.boolean().optional(),
  /**
   * Set by the compaction job when it found nothing new to summarise, or a result that would not
   * shrink the context: the point is closed without a summary (no boundary) and is never run again.
   */
  noop: z.boolean().optional(),
});

export const SubtaskPart = PartBase.extend({
  type: z.literal('subtask'),
  agent: z.string(),
  prompt: z.string(),
  description: z.string(),
});

export const RetryPart = PartBase.extend({
  type: z.literal('retry'),
  attempt: z.number().int(),
  error: ErrorData,
});

export const Part = z.discriminatedUnion('type', [
  TextPart,
  ReasoningPart,
  FilePart,
  ToolPart,
  StepStartPart,
  StepFinishPart,
  CompactionPart,
  SubtaskPart,
  RetryPart,
]);
export type Part = z.infer<typeof Part>;
export type TextPart = z.infer<typeof TextPart>;
export type ReasoningPart = z.infer<typeof ReasoningPart>;
export type FilePart = z.infer<typeof FilePart>;
export type ToolPart = z.infer<typeof ToolPart>;
export type StepStartPart = z.infer<typeof StepStartPart>;
export type StepFinishPart = z.infer<typeof StepFinishPart>;
export type CompactionPart = z.infer<typeof CompactionPart>;
export type SubtaskPart = z.infer<typeof SubtaskPart>;
export type RetryPart = z.infer<typeof RetryPart>;
export type PartType = Part['type'];
/** A part before it has ids (what a writer hands to the repository). */
export type NewPart = Part extends infer P
  ? P extends Part
    ? Omit<P, 'id' | 'sessionId' | 'messageId'>
    : never
  : never;
