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
  /**
   * An event too large for the stream (EVENT_MAX_BYTES of JSON) was left out in its place: read
   * what it described (`messageId`, `partId`) with GET …/messages. A tool part's call id and status
   * come with it, so a client can close the call.
   */
  z.object({
    type: z.literal('event.clipped'),
    event: z.string(),
    bytes: z.number().int(),
    messageId: z.string().optional(),
    partId: z.string().optional(),
    partType: z.string().optional(),
    callId: z.string().optional(),
    status: z.string().optional(),
  }),
]);
export type SessionEvent = z.infer<typeof SessionEvent>;

/**
 * The largest event a session's stream carries, as JSON. Streams are kept in Redis for resumption
 * (10,000 events a session), so an event's size is what a tenant could otherwise make Redis hold:
 * a user message of a megabyte, a tool output raised to 16 MiB. Larger events are published as
 * `event.clipped`; PostgreSQL keeps the whole part. 128 KiB passes a default tool output (50 KiB,
 * escaped) whole.
 */
export const EVENT_MAX_BYTES = 128 * 1024;

/** What is published in place of an event of `bytes` bytes of JSON, past EVENT_MAX_BYTES. */
export function clippedEvent(event: SessionEvent, bytes: number): SessionEvent {
  const base = { type: 'event.clipped' as const, event: event.type, bytes };
  switch (event.type) {
    case 'part.updated': {
      const p = event.part;
      return {
        ...base,
        messageId: p.messageId,
        partId: p.id,
        partType: p.type,
        ...(p.type === 'tool' ? { callId: p.callId, status: p.state.status } : {}),
      };
    }
    case 'part.delta':
      return { ...base, messageId: event.messageId, partId: event.partId };
    case 'message.updated':
      return { ...base, messageId: event.message.id };
    default:
      return base;
  }
}
