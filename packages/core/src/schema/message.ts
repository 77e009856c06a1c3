import { z } from 'zod';
import { ErrorData } from '../errors.ts';
import { Part } from './part.ts';
import { Usage } from './usage.ts';

// Messages: one row each in PostgreSQL, ordered per session by `seq` (assigned by the database).

const MessageBase = z.object({
  id: z.string(),
  sessionId: z.string(),
  /** Per-session order assigned by PostgreSQL; never a wall clock. */
  seq: z.number().int(),
  time: z.object({ created: z.number(), completed: z.number().optional() }),
  /** Set by a revert: hidden from the model, kept in the log. */
  reverted: z.boolean().optional(),
});

export const UserMessage = MessageBase.extend({
  role: z.literal('user'),
  agent: z.string(),
  /** Extra system text for this message (second system block). */
  system: z.string().optional(),
  /** Written by Loopline itself (compaction marker, continue message, replayed request). */
  synthetic: z.boolean().optional(),
  /** Set by the worker when the message arrived while the loop was working (steer mode wraps it). */
  midRun: z.boolean().optional(),
});

export const FinishReason = z.enum([
  'stop',
  'length',
  'content-filter',
  'tool-calls',
  'error',
  'interrupted',
  'other',
]);
export type FinishReason = z.infer<typeof FinishReason>;

export const AssistantMessage = MessageBase.extend({
  role: z.literal('assistant'),
  /** The user message this answers. */
  parentId: z.string(),
  /** true for a compaction summary. */
  summary: z.boolean().optional(),
  finish: FinishReason.optional(),
  error: ErrorData.optional(),
  usage: Usage.optional(),
  cost: z.number().optional(),
  model: z.string(),
  agent: z.string(),
  /** The step number (per session) that produced it. */
  step: z.number().int().optional(),
});

export const Message = z.discriminatedUnion('role', [UserMessage, AssistantMessage]);
export type UserMessage = z.infer<typeof UserMessage>;
export type AssistantMessage = z.infer<typeof AssistantMessage>;
export type Message = z.infer<typeof Message>;

export const WithParts = z.object({ info: Message, parts: z.array(Part) });
export type WithParts = z.infer<typeof WithParts>;

/** An assistant message that finished without an error (a usable summary, or a closed reply). */
export function isFinished(msg: Message): boolean {
  return msg.role === 'assistant' && msg.finish !== undefined && msg.error === undefined;
}
