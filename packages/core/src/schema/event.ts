import { z } from 'zod';
import { ErrorData } from '../errors.ts';
import { Message } from './message.ts';
import { Part } from './part.ts';

// One typed event union: published to the session's Redis stream after commit, served as SSE.

export const SessionStatus = z.enum(['idle', 'queued', 'running', 'compacting', 'waiting', 'error']);
export type SessionStatus = z.infer<typeof SessionStatus>;

export const SessionEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('session.status'), status: SessionStatus, detail: z.string().optional() }),
  z.object({ type: z.literal('message.updated'), message: Message }),
  z.object({ type: z.literal('part.updated'), part: Part }),
  z.object({
    type: z.literal('part.delta'),
    messageId: z.string(),
    partId: z.string(),
    field: z.enum(['text', 'reasoning']),
    delta: z.string(),
  }),
  z.object({
    type: z.literal('session.compacted'),
    compactionId: z.string(),
    auto: z.boolean(),
    rung: z.string(),
    tokensBefore: z.number(),
    tokensAfter: z.number(),
  }),
  z.object({ type: z.literal('session.pruned'), parts: z.number(), tokens: z.number() }),
  /**
   * A revert hid every message from `fromSeq` on (their rows stay, marked `reverted`); clients drop
   * them from their view. `messageId` is the message the revert was asked for; `fromSeq` may be
   * lower when the revert took a whole compaction point with it.
   */
  z.object({
    type: z.literal('session.reverted'),
    messageId: z.string(),
    fromSeq: z.number().int(),
    reverted: z.number().int(),
    boundarySeq: z.number().int().nullable(),
  }),
  z.object({ type: z.literal('session.error'), error: ErrorData }),
  z.object({ type: z.literal('session.idle') }),
]);
export type SessionEvent = z.infer<typeof SessionEvent>;
