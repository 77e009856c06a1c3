import { readEvents, type StreamedEvent } from './events.ts';
import type { KeySpace } from './keys.ts';
import { duplicateRedis, type RedisClient } from './redis.ts';

// The gateway's fan-out of session events to SSE clients on two Redis connections per process,
// however many clients: a subscriber (first watcher of a session SUBSCRIBEs to the channel
// publishEvents PUBLISHes on after its XADD, last one unsubscribes) and a reader (non-blocking
// XREAD per watcher from its own cursor, one key per command so it works on a Cluster).
// A wake-up is only a hint and the stream is the truth: a watcher also reads every heartbeat, so
// a notification lost to a reconnect (pub/sub is at-most-once) costs one heartbeat of latency and
// never an event lost or repeated.

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

/** Creates the process's event hub; its two connections are duplicated from `redis` on first use. */
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
