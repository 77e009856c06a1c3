import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';

// The one place a Redis client is made (gateway, worker, demo, tests): a single-node ioredis
// `Redis` or a `Cluster`. Cluster node connections get `redisOptions` (where BullMQ looks for
// `maxRetriesPerRequest: null`), and duplicateRedis hides duplicate()'s other Cluster signature.
// REDIS_URL / REDIS_CLUSTER_NODES: README configuration table, docs/DEPLOYMENT.md. Every key carries
// a hash tag (keys.ts), so no command, pipeline or script spans two slots.

export type RedisClient = Redis | Cluster;

export interface RedisConfig {
  /** Single node. Default redis://127.0.0.1:6379. */
  url?: string | undefined;
  /** Redis Cluster seed nodes (`host:port` or redis[s]:// URLs); set → a Cluster client. */
  clusterNodes?: readonly string[] | undefined;
}

export interface RedisClientOptions {
  /**
   * Retries of a command while disconnected before it fails. BullMQ workers (and anything they
   * share a connection with) need `null`: retry for ever. The gateway fails fast (3).
   */
  maxRetriesPerRequest: number | null;
  /**
   * Every tick's commands in one socket write (coalesceWrites; single node only). The worker and
   * the gateway set it: their connections carry many sessions' or requests' commands at once.
   */
  coalesceWrites?: boolean;
  /** CLIENT SETNAME of the connection(s). */
  connectionName?: string;
}

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** REDIS_CLUSTER_NODES (comma-separated), else REDIS_URL. */
export function redisConfigFromEnv(env: Record<string, string | undefined> = process.env): RedisConfig {
  const nodes = (env.REDIS_CLUSTER_NODES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (nodes.length > 0) return { clusterNodes: nodes };
  return { url: env.REDIS_URL || DEFAULT_REDIS_URL };
}

/** A short description for logs (no credentials). */
export function describeRedisConfig(config: RedisConfig): string {
  if (config.clusterNodes?.length) {
    return `cluster ${parseClusterNodes(config.clusterNodes)
      .nodes.map((n) => `${n.host}:${n.port}`)
      .join(',')}`;
  }
  const url = new URL(config.url ?? DEFAULT_REDIS_URL);
  return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
}

/** Whether the client is a Redis Cluster client. */
export function isCluster(client: RedisClient): client is Cluster {
  return (client as { isCluster?: boolean }).isCluster === true;
}

/** A new client from configuration: `Cluster` when cluster nodes are configured, else `Redis`. */
export function createRedis(config: RedisConfig, options: RedisClientOptions): RedisClient {
  const perConnection: RedisOptions = {
    maxRetriesPerRequest: options.maxRetriesPerRequest,
    ...(options.connectionName ? { connectionName: options.connectionName } : {}),
  };
  if (config.clusterNodes && config.clusterNodes.length > 0) {
    const { nodes, redisOptions } = parseClusterNodes(config.clusterNodes);
    const clusterOptions: ClusterOptions = {
      redisOptions: { ...redisOptions, ...perConnection },
      // A managed cluster behind TLS often announces nodes by IP addresses its certificate does
      // not name: keep the announced address as is (no DNS round trip for IPs).
      ...(redisOptions.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
    };
    return new Cluster(nodes, clusterOptions);
  }
  const redis = new Redis(config.url ?? DEFAULT_REDIS_URL, perConnection);
  if (options.coalesceWrites) coalesceWrites(redis);
  return redis;
}

/**
 * Another connection to the same Redis or Cluster with the same settings (blocking reads, pub/sub
 * and BullMQ workers need their own), with some options changed.
 */
export function duplicateRedis(
  client: RedisClient,
  overrides: Partial<RedisClientOptions> = {},
): RedisClient {
  const options: RedisOptions = {
    ...(overrides.maxRetriesPerRequest !== undefined
      ? { maxRetriesPerRequest: overrides.maxRetriesPerRequest }
      : {}),
    ...(overrides.connectionName ? { connectionName: overrides.connectionName } : {}),
  };
  if (isCluster(client)) return client.duplicate([], { redisOptions: options });
  const redis = client.duplicate(options);
  if (overrides.coalesceWrites) coalesceWrites(redis);
  return redis;
}

/** Seed nodes and the per-node options (credentials, TLS) of REDIS_CLUSTER_NODES entries. */
export function parseClusterNodes(entries: readonly string[]): {
  nodes: Array<{ host: string; port: number }>;
  redisOptions: RedisOptions;
} {
  const nodes: Array<{ host: string; port: number }> = [];
  let redisOptions: RedisOptions = {};
  entries.forEach((entry, i) => {
    const url = new URL(/^[a-z]+:\/\//i.test(entry) ? entry : `redis://${entry}`);
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      throw new Error(`REDIS_CLUSTER_NODES: ${url.protocol} is not redis: or rediss:`);
    }
    const port = url.port ? Number.parseInt(url.port, 10) : 6379;
    if (!url.hostname || !Number.isFinite(port)) throw new Error(`REDIS_CLUSTER_NODES: bad entry ${entry}`);
    nodes.push({ host: url.hostname.replace(/^\[|\]$/g, ''), port });
    if (i === 0) {
      redisOptions = {
        ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
        ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
        ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
      };
    }
  });
  if (nodes.length === 0) throw new Error('REDIS_CLUSTER_NODES: no nodes');
  return { nodes, redisOptions };
}

/**
 * Every tick's commands of this client in one socket write, for the client's whole life (each new
 * connection after a reconnect too). A Cluster client (one connection per node) is left alone.
 */
// A worker runs hundreds of sessions' steps on one connection: commands that different steps send
// in the same tick (their PostgreSQL or Redis answers arrived together) now share one system call
// instead of one each, and Redis reads them in one go. The bytes, their order and every reply are
// unchanged; a write waits at most until the tick's microtasks have run.
export function coalesceWrites(redis: Redis): void {
  const patched = new WeakSet<object>();
  const patch = () => {
    const stream = redis.stream as
      | (typeof redis.stream & { write: (...args: unknown[]) => boolean })
      | undefined;
    if (!stream || patched.has(stream)) return;
    patched.add(stream);
    const write = stream.write;
    let scheduled = false;
    const uncork = () => {
      scheduled = false;
      stream.uncork();
    };
    stream.write = function coalescedWrite(this: unknown, ...args: unknown[]) {
      if (!scheduled) {
        scheduled = true;
        stream.cork();
        process.nextTick(uncork);
      }
      return write.apply(this, args);
    };
  };
  redis.on('connect', patch);
  patch();
}
