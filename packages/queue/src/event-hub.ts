import { readEvents, type StreamedEvent } from './events.ts';
import type { KeySpace } from './keys.ts';
import { duplicateRedis, type RedisClient } from './redis.ts';

// The gateway's fan-out of session events to SSE clients, with a fixed number of Redis
// connections per gateway process however many clients are connected:
//
// - one subscriber connection: publishEvents PUBLISHes on the session's channel after the XADD
//   (lua/publishEvents-1.lua); the hub SUBSCRIBEs to the channel of every session someone watches
//   (first watcher subscribes, last one unsubscribes) and wakes that session's watchers;
// - one reader connection: each watcher catches up from its own cursor with a non-blocking
//   XREAD of its session's stream (one key per command, so it works on a Redis Cluster as is:
//   the client routes it to the stream's slot).
//
// A wake-up is only a hint, and the stream is the truth: a watcher reads after every wake-up,
// and also when it has heard nothing for its heartbeat interval, so a notification lost while
// the subscriber reconnects (pub/sub is at-most-once) costs at most one heartbeat of latency,
// and events are never lost or repeated (each watcher's cursor is its last delivered id).

export interface EventHub {
  /**
   * Registers interest in a session's events; resolves once the subscription is active (so a
   * read after it misses no wake-up). `wake` runs whenever the stream may have grown.
   * Returns the function that ends the watch.
   */
  watch(sessionId: string, wake: () => void): Promise<() => void>;
  /** Events after `cursor` ('0' = all retained), without blocking; at most `count`. */
  read(sessionId: string, cursor: string, count?: number): Promise<StreamedEvent[]>;
  /** Sessions watched right now, and watchers in all. */
  stats(): { sessions: number; watchers: number };
  close(): void;
}

export interface EventHubOptions {
  /** CLIENT SETNAME prefix of the two connections (default `loopline-sse`). */
  connectionName?: string;
}

interface Channel {
  wakes: Set<() => void>;
  subscribed: Promise<void>;
}

export function createEventHub(redis: RedisClient, keys: KeySpace, opts: EventHubOptions = {}): EventHub {
  const name = opts.connectionName ?? 'loopline-sse';
  let reader: RedisClient | undefined;
  let subscriber: RedisClient | undefined;
  const channels = new Map<string, Channel>();
  let watchers = 0;
  let closed = false;

  // Connections are made on first use: a gateway with no SSE client holds none.
  const connections = () => {
    if (!reader || !subscriber) {
      reader = duplicateRedis(redis, { connectionName: `${name}-reader`, maxRetriesPerRequest: 3 });
      subscriber = duplicateRedis(redis, {
        connectionName: `${name}-subscriber`,
        maxRetriesPerRequest: null,
      });
      subscriber.on('message', (channel: string) => {
        for (const wake of channels.get(channel)?.wakes ?? []) wake();
      });
      // After a reconnect (subscriptions are restored by ioredis), wake everyone: a notification
      // may have been missed meanwhile.
      let first = true;
      subscriber.on('ready', () => {
        if (first) {
          first = false;
          return;
        }
        for (const channel of channels.values()) for (const wake of channel.wakes) wake();
      });
    }
    return { reader, subscriber };
  };

  return {
    async watch(sessionId, wake) {
      if (closed) throw new Error('event hub closed');
      const { subscriber } = connections();
      const key = keys.eventsChannel(sessionId);
      let channel = channels.get(key);
      if (!channel) {
        const subscribed = subscriber.subscribe(key).then(() => undefined);
        channel = { wakes: new Set(), subscribed };
        channels.set(key, channel);
        // A failed SUBSCRIBE leaves the watcher on its heartbeat reads; forget the channel so the
        // next watcher tries again.
        subscribed.catch(() => {
          if (channels.get(key) === channel) channels.delete(key);
        });
      }
      channel.wakes.add(wake);
      watchers += 1;
      const current = channel;
      let ended = false;
      const unwatch = () => {
        if (ended) return;
        ended = true;
        watchers -= 1;
        current.wakes.delete(wake);
        if (current.wakes.size === 0 && channels.get(key) === current) {
          channels.delete(key);
          if (!closed) subscriber.unsubscribe(key).catch(() => undefined);
        }
      };
      try {
        await current.subscribed;
      } catch {
        // See above: reads on the heartbeat still deliver everything.
      }
      return unwatch;
    },
    read(sessionId, cursor, count = 500) {
      return readEvents(connections().reader, keys, sessionId, cursor, undefined, count);
    },
    stats: () => ({ sessions: channels.size, watchers }),
    close() {
      closed = true;
      channels.clear();
      reader?.disconnect();
      subscriber?.disconnect();
    },
  };
}
