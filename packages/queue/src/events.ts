import type { SessionEvent } from '@loopline/core';
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';

// Session events: a Redis stream per session. Published after the PostgreSQL commit they
// describe; the stream id is the SSE event id, so a client resumes with Last-Event-ID.

const MAX_LEN = 10_000;

export async function publishEvents(
  redis: RedisClient,
  keys: KeySpace,
  sessionId: string,
  events: SessionEvent[],
): Promise<void> {
  if (events.length === 0) return;
  const key = keys.events(sessionId);
  const pipeline = redis.pipeline();
  for (const event of events) pipeline.xadd(key, 'MAXLEN', '~', MAX_LEN, '*', 'e', JSON.stringify(event));
  pipeline.expire(key, 7 * 86_400);
  await pipeline.exec();
}

export interface StreamedEvent {
  id: string;
  event: SessionEvent;
}

/** Events after `afterId` ('0' for all retained, '$' for only new ones), blocking up to blockMs. */
export async function readEvents(
  redis: RedisClient,
  keys: KeySpace,
  sessionId: string,
  afterId: string,
  blockMs: number,
  count = 500,
): Promise<StreamedEvent[]> {
  const key = keys.events(sessionId);
  const reply = (await redis.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, afterId)) as
    | [string, [string, string[]][]][]
    | null;
  if (!reply) return [];
  const out: StreamedEvent[] = [];
  for (const [, entries] of reply) {
    for (const [id, fields] of entries) {
      const json = fields[1];
      if (json) out.push({ id, event: JSON.parse(json) as SessionEvent });
    }
  }
  return out;
}

/** The id of the newest event, or '0-0' when the stream is empty. */
export async function lastEventId(redis: RedisClient, keys: KeySpace, sessionId: string): Promise<string> {
  const entries = (await redis.xrevrange(keys.events(sessionId), '+', '-', 'COUNT', 1)) as [
    string,
    string[],
  ][];
  return entries[0]?.[0] ?? '0-0';
}
