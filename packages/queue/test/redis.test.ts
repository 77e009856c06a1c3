import { randomUUID } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  createRedis,
  DEFAULT_REDIS_URL,
  describeRedisConfig,
  duplicateRedis,
  isCluster,
  parseClusterNodes,
  redisConfigFromEnv,
} from '../src/index.ts';

// The Redis client factory (redis.ts): configuration from the environment, single node or
// Cluster, and duplicates that keep the kind and settings. test/e2e/redis-cluster.test.ts runs it
// against a real cluster.

describe('redis configuration', () => {
  it('prefers REDIS_CLUSTER_NODES, else REDIS_URL, else the local default', () => {
    expect(redisConfigFromEnv({})).toEqual({ url: DEFAULT_REDIS_URL });
    expect(redisConfigFromEnv({ REDIS_URL: 'redis://r:6380' })).toEqual({ url: 'redis://r:6380' });
    expect(redisConfigFromEnv({ REDIS_URL: 'redis://r:6380', REDIS_CLUSTER_NODES: ' a:1, b:2 ,' })).toEqual({
      clusterNodes: ['a:1', 'b:2'],
    });
    // Empty (as compose sets it when unset): single node.
    expect(redisConfigFromEnv({ REDIS_CLUSTER_NODES: '' })).toEqual({ url: DEFAULT_REDIS_URL });
  });

  it('parses seed nodes; the first entry carries credentials and TLS', () => {
    expect(parseClusterNodes(['10.0.0.1:7000', 'node-b'])).toEqual({
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'node-b', port: 6379 },
      ],
      redisOptions: {},
    });
    expect(parseClusterNodes(['rediss://default:p%40ss@c.example:6380', 'redis://d.example:6381'])).toEqual({
      nodes: [
        { host: 'c.example', port: 6380 },
        { host: 'd.example', port: 6381 },
      ],
      redisOptions: { username: 'default', password: 'p@ss', tls: {} },
    });
    expect(() => parseClusterNodes(['http://x:1'])).toThrow(/not redis/);
    expect(() => parseClusterNodes([])).toThrow(/no nodes/);
  });

  it('describes a configuration without its credentials', () => {
    expect(describeRedisConfig({ url: 'redis://:secret@r:6380/2' })).toBe('redis://r:6380/2');
    expect(describeRedisConfig({ clusterNodes: ['rediss://u:secret@a:1', 'b:2'] })).toBe('cluster a:1,b:2');
  });
});

describe('createRedis', () => {
  it('makes a single-node client and duplicates it with overrides', async () => {
    const redis = createRedis(
      { url: process.env.REDIS_URL ?? DEFAULT_REDIS_URL },
      { maxRetriesPerRequest: 3 },
    );
    try {
      expect(redis).toBeInstanceOf(Redis);
      expect(isCluster(redis)).toBe(false);
      expect(await redis.ping()).toBe('PONG');
      const dup = duplicateRedis(redis, { maxRetriesPerRequest: null, connectionName: 'loopline-test' });
      expect(dup).toBeInstanceOf(Redis);
      expect((dup as Redis).options.maxRetriesPerRequest).toBeNull();
      expect((dup as Redis).options.connectionName).toBe('loopline-test');
      dup.disconnect();
    } finally {
      redis.disconnect();
    }
  });

  it('makes a Cluster client whose node connections carry the BullMQ options', () => {
    const cluster = createRedis(
      { clusterNodes: ['rediss://u:pw@127.0.0.1:1'] },
      { maxRetriesPerRequest: null },
    ) as Cluster;
    try {
      expect(cluster).toBeInstanceOf(Cluster);
      expect(isCluster(cluster)).toBe(true);
      expect(cluster.options.redisOptions).toMatchObject({
        maxRetriesPerRequest: null,
        username: 'u',
        password: 'pw',
        tls: {},
      });
      const dup = duplicateRedis(cluster, { connectionName: 'sse' }) as Cluster;
      expect(isCluster(dup)).toBe(true);
      expect(dup.options.redisOptions).toMatchObject({ maxRetriesPerRequest: null, connectionName: 'sse' });
      dup.disconnect();
    } finally {
      cluster.disconnect();
    }
  });
});

describe('coalesceWrites', () => {
  // Counts the socket's system-call-level writes (_write and _writev of the Writable), nothing else.
  function countWrites(redis: Redis): { count: number } {
    const counter = { count: 0 };
    const stream = redis.stream as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>;
    for (const method of ['_write', '_writev'] as const) {
      const original = stream[method];
      stream[method] = function (this: unknown, ...args: unknown[]) {
        counter.count++;
        return original.apply(this, args);
      };
    }
    return counter;
  }

  async function fortyInOneTick(redis: Redis, key: string): Promise<number[]> {
    return Promise.all(Array.from({ length: 40 }, () => redis.incr(key)));
  }

  it('sends a tick of commands in one write, replies in order, after a reconnect too', async () => {
    const url = process.env.REDIS_URL ?? DEFAULT_REDIS_URL;
    const key = `loopline-test:coalesce:${randomUUID()}`;
    const plain = createRedis({ url }, { maxRetriesPerRequest: 3 }) as Redis;
    const coalesced = createRedis({ url }, { maxRetriesPerRequest: 3, coalesceWrites: true }) as Redis;
    try {
      await Promise.all([plain.ping(), coalesced.ping()]);
      // Without the option every command is a write of its own (the counter sees them).
      const before = countWrites(plain);
      await fortyInOneTick(plain, key);
      expect(before.count).toBe(40);

      const counter = countWrites(coalesced);
      const replies = await fortyInOneTick(coalesced, key);
      expect(counter.count).toBe(1);
      expect(replies).toEqual(Array.from({ length: 40 }, (_, i) => 41 + i));

      // A new connection (reconnect) is coalesced as well.
      const ready = new Promise((resolve) => coalesced.once('ready', resolve));
      coalesced.disconnect(true);
      await ready;
      const again = countWrites(coalesced);
      const after = await fortyInOneTick(coalesced, key);
      expect(again.count).toBe(1);
      expect(after[39]).toBe(120);
      // Commands of later ticks go out on their own: nothing waits for more.
      expect(await coalesced.get(key)).toBe('120');
      expect(again.count).toBe(2);

      const dup = duplicateRedis(coalesced, { coalesceWrites: true }) as Redis;
      try {
        await dup.ping();
        const dupCounter = countWrites(dup);
        await fortyInOneTick(dup, key);
        expect(dupCounter.count).toBe(1);
      } finally {
        dup.disconnect();
      }
    } finally {
      await plain.del(key);
      plain.disconnect();
      coalesced.disconnect();
    }
  });
});
