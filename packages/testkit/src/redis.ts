import { randomBytes } from 'node:crypto';

// Redis for tests: the shared local server, with a unique prefix per test so parallel test files
// never see each other's queues or keys. Prefixes contain no ':' (BullMQ rejects it in names).

/** The test Redis URL (REDIS_URL, else the local default). */
export function redisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** A unique prefix such as `t-steps-5f3a9c1e` for queue names and keys. */
export function testRedisPrefix(label = 'test'): string {
  const slug = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 30);
  return `t-${slug}-${randomBytes(4).toString('hex')}`;
}
