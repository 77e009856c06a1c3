import { clippedEvent, EVENT_MAX_BYTES, type SessionEvent } from '@loopline/core';
import type { KeySpace } from './keys.ts';
import type { RedisClient } from './redis.ts';
import { loadLua } from './scripts.ts';

// Session events: a Redis stream per session. Published after the PostgreSQL commit they
// describe; the stream id is the SSE event id, so a client resumes with Last-Event-ID. An event
// larger than core's EVENT_MAX_BYTES is published as `event.clipped` (what it described is read
// from PostgreSQL): a tenant's message or tool output decides how much Redis holds otherwise. For
// the same reason a stream keeps at most EVENT_STREAM_MAX_BYTES (and EVENT_STREAM_MAX_LEN events):
// the oldest go first (docs/security.md).

/** Most events a session's stream keeps (the oldest go first). */
export const EVENT_STREAM_MAX_LEN = 10_000;
/**
 * Most bytes of event JSON a session's stream keeps: without it, 10,000 events of up to 128 KiB
 * each, that is up to 1.25 GB of one Redis for one session of one tenant.
 */
export const EVENT_STREAM_MAX_BYTES = 8 * 1024 * 1024;
const TTL_S = 7 * 86_400;

const defined = new WeakSet<RedisClient>();
type Publish = (
  key: string,
  bytesKey: string,
  maxLen: number,
  ttlS: number,
  channel: string,
  maxBytes: number,
  ...events: string[]
) => Promise<number>;

/**
 * One EVALSHA per publish (XADD each event, the budgets, EXPIRE, in a Lua script) instead of a pipeline:
 * the same single round trip, without ioredis' Pipeline construction, which copies every script
 * defined on the connection (BullMQ's ~50) and showed up as ~0.6 ms per step in the profile.
 */
function publishCommand(redis: RedisClient): Publish {
  if (!defined.has(redis)) {
    redis.defineCommand('llPublishEvents', { numberOfKeys: 2, lua: loadLua('publishEvents-2.lua') });
    defined.add(redis);
  }
  return (redis as unknown as { llPublishEvents: Publish }).llPublishEvents.bind(redis);
}

/** Appends session events to the session's stream and wakes its watchers. */
export async function publishEvents(
  redis: RedisClient,
  keys: KeySpace,
  sessionId: string,
  events: SessionEvent[],
): Promise<void> {
  if (events.length === 0) return;
  const key = keys.events(sessionId);
  const json = new Array<string>(events.length);
  for (let i = 0; i < events.length; i++) json[i] = streamJson(events[i]!);
  await publishCommand(redis)(
    key,
    keys.eventsBytes(sessionId),
    EVENT_STREAM_MAX_LEN,
    TTL_S,
    keys.eventsChannel(sessionId),
    EVENT_STREAM_MAX_BYTES,
    ...json,
  );
}

/** An event's JSON as the stream keeps it: past EVENT_MAX_BYTES, the `event.clipped` in its place. */
function streamJson(event: SessionEvent): string {
  const json = JSON.stringify(event);
  // A UTF-8 byte is at least a third of a UTF-16 unit: count bytes only when it could matter.
  if (json.length * 3 <= EVENT_MAX_BYTES) return json;
  const bytes = Buffer.byteLength(json, 'utf8');
  return bytes <= EVENT_MAX_BYTES ? json : JSON.stringify(clippedEvent(event, bytes));
}

export interface StreamedEvent {
  id: string;
  event: SessionEvent;
}

/**
 * Events after `afterId` ('0' for all retained, '$' for only new ones), blocking up to blockMs;
 * blockMs undefined: no blocking (what the gateway's shared event hub does).
 */
export async function readEvents(
  redis: RedisClient,
  keys: KeySpace,
  sessionId: string,
  afterId: string,
  blockMs: number | undefined,
  count = 500,
): Promise<StreamedEvent[]> {
  const key = keys.events(sessionId);
  const reply = (
    blockMs === undefined
      ? await redis.xread('COUNT', count, 'STREAMS', key, afterId)
      : await redis.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, afterId)
  ) as [string, [string, string[]][]][] | null;
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
